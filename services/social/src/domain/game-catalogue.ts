import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { type Pool, withTx } from '@chat/kit';
import { v7 as uuidv7 } from 'uuid';
import { z } from 'zod';
import { analyseCatalogue, type CatalogueGame, catalogueChecksum, gameIdsBySlug, lockCatalogue, replaceCatalogue } from '../db/games.ts';

/** The game catalogue file the project ships (facts only: names, aliases, years, executables). */
export const DEFAULT_CATALOGUE_FILE = new URL('../../data/games.json', import.meta.url).pathname;

const CatalogueEntry = z.object({
  name: z.string().trim().min(1).max(200),
  aliases: z.array(z.string().trim().min(1).max(200)).max(50).default([]),
  executables: z.array(z.string().trim().min(1).max(260)).max(50).default([]),
  coverUrl: z.url().nullable().default(null),
  releaseYear: z.number().int().min(1950).max(2100).nullable().default(null),
});
const CatalogueFile = z.array(CatalogueEntry).min(1);

/**
 * A name as search compares it: accents stripped, lower case, anything but letters and digits as
 * one space ("Pokémon: Let's Go" -> "pokemon let s go").
 */
export function normaliseGameName(name: string): string {
  return name
    .normalize('NFKD')
    .replace(/\p{M}+/gu, '')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .trim();
}

export class CatalogueFileError extends Error {}

/** Parses the file's JSON; two entries with the same normalised name are an error in the file. */
export function parseCatalogue(text: string): z.output<typeof CatalogueFile> {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new CatalogueFileError(`the catalogue is not valid JSON: ${(err as Error).message}`);
  }
  const parsed = CatalogueFile.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new CatalogueFileError(`the catalogue breaks its schema at ${issue?.path.join('.')}: ${issue?.message}`);
  }
  const seen = new Set<string>();
  for (const entry of parsed.data) {
    const slug = normaliseGameName(entry.name);
    if (!slug) throw new CatalogueFileError(`"${entry.name}" has no letters or digits`);
    if (seen.has(slug)) throw new CatalogueFileError(`"${entry.name}" appears twice`);
    seen.add(slug);
  }
  return parsed.data;
}

export type LoadOutcome = { loaded: boolean; games: number; removed: number; checksum: string };

/**
 * Loads the catalogue file into PostgreSQL when its bytes differ from the file loaded last (or
 * always with `force`), in one transaction, so that searches see the old or the new catalogue,
 * never half of one. Games keep their ids across reloads (matched by normalised name).
 */
export async function loadCatalogue(pool: Pool, file = DEFAULT_CATALOGUE_FILE, options: { force?: boolean } = {}): Promise<LoadOutcome> {
  const text = await readFile(file, 'utf8');
  const checksum = createHash('sha256').update(text).digest('hex');
  const entries = parseCatalogue(text);
  const outcome = await withTx(pool, async (tx): Promise<LoadOutcome> => {
    await lockCatalogue(tx);
    if (!options.force && (await catalogueChecksum(tx)) === checksum) return { loaded: false, games: entries.length, removed: 0, checksum };
    const ids = await gameIdsBySlug(tx);
    const games: CatalogueGame[] = entries.map((entry) => {
      const slug = normaliseGameName(entry.name);
      const searchNames = [...new Set([entry.name, ...entry.aliases].map(normaliseGameName).filter(Boolean))];
      return { ...entry, slug, id: ids.get(slug) ?? uuidv7(), searchNames };
    });
    const removed = await replaceCatalogue(tx, games, checksum);
    return { loaded: true, games: games.length, removed, checksum };
  });
  // Fresh statistics at once (autovacuum would take a while), so searches plan on the index.
  if (outcome.loaded) await analyseCatalogue(pool);
  return outcome;
}
