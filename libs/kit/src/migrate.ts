import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { Pool } from './db.ts';

/** A folder of forward-only migrations named `NNNN_description.sql`, under a source name. */
export interface MigrationSource {
  source: string;
  dir: string;
}

const KIT_MIGRATIONS: MigrationSource = { source: 'kit', dir: new URL('../migrations', import.meta.url).pathname };

// One arbitrary, fixed key: every replica of every service serialises its migrations on it.
const LOCK_KEY = 727_001;

export class MigrationChecksumError extends Error {}

/** A file numbered inside a range that the database has already passed: it would run out of order elsewhere. */
export class MigrationOrderError extends Error {}

/**
 * Applies each not-yet-applied file once, in order, each in its own transaction, under an
 * advisory lock so that replicas starting together do not race. A file whose content changed
 * after it was applied stops the run: migrations are forward-only. So does a new file that sorts
 * before one already applied (or shares its number with another file): a new migration takes the
 * next number after the highest of its folder, or databases would apply files in different orders.
 * (Two files sharing a number still sort by name; test/contract/migrations.test.ts refuses new ones.)
 */
export async function migrate(pool: Pool, serviceDir: string, log?: Logger): Promise<string[]> {
  const sources = [KIT_MIGRATIONS, { source: 'service', dir: serviceDir }];
  const client = await pool.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [LOCK_KEY]);
    await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      id text PRIMARY KEY, checksum text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
    const applied = new Map(
      (await client.query<{ id: string; checksum: string }>('SELECT id, checksum FROM schema_migrations')).rows.map((r) => [
        r.id,
        r.checksum,
      ]),
    );
    const done: string[] = [];
    const migrations = await readMigrations(sources);
    assertInOrder(migrations, applied);
    for (const { id, sql } of migrations) {
      const checksum = createHash('sha256').update(sql).digest('hex');
      const previous = applied.get(id);
      if (previous === checksum) continue;
      if (previous) throw new MigrationChecksumError(`Migration ${id} changed after it was applied; add a new migration instead`);
      await client.query('BEGIN');
      try {
        await client.query(sql);
        await client.query('INSERT INTO schema_migrations (id, checksum) VALUES ($1, $2)', [id, checksum]);
        await client.query('COMMIT');
      } catch (err) {
        await client.query('ROLLBACK');
        throw new Error(`Migration ${id} failed: ${(err as Error).message}`, { cause: err });
      }
      log?.info({ migration: id }, 'migration applied');
      done.push(id);
    }
    return done;
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [LOCK_KEY]).catch(() => {});
    client.release();
  }
}

/** No unapplied file sorts before an applied one of its folder. */
function assertInOrder(migrations: { id: string }[], applied: Map<string, string>): void {
  const firstUnapplied = new Map<string, string>();
  for (const { id } of migrations) {
    const [source] = id.split('/') as [string, string];
    const pending = firstUnapplied.get(source);
    if (applied.has(id) && pending !== undefined) {
      throw new MigrationOrderError(`Migration ${pending} sorts before ${id}, already applied; number it after the highest`);
    }
    if (!applied.has(id) && pending === undefined) firstUnapplied.set(source, id);
  }
}

async function readMigrations(sources: MigrationSource[]) {
  const all: { id: string; sql: string }[] = [];
  for (const { source, dir } of sources) {
    const files = (await readdir(dir)).filter((f) => /^\d{4}_[\w-]+\.sql$/.test(f)).sort();
    for (const file of files) all.push({ id: `${source}/${file}`, sql: await readFile(join(dir, file), 'utf8') });
  }
  return all;
}
