import { createLogger, createPool, loadConfig, migrate } from '@chat/kit';
import { z } from 'zod';
import { CatalogueFileError, DEFAULT_CATALOGUE_FILE, loadCatalogue } from '../domain/game-catalogue.ts';

/**
 * Operator command: replaces the game index with a catalogue file (default: the one the project
 * ships), even when it is the file loaded last. `npm run games:reload -w @chat/social -- [file]`.
 * Reads DATABASE_URL like the service.
 */
const config = loadConfig(
  z.object({ DATABASE_URL: z.string().default('postgres://postgres@127.0.0.1:5432/social'), LOG_LEVEL: z.string().default('info') }),
);
const log = createLogger({ service: 'social-games-reload', level: config.LOG_LEVEL });
const file = process.argv[2] ?? DEFAULT_CATALOGUE_FILE;
const pool = createPool(config.DATABASE_URL, 1);
try {
  // A database the service never started against gets its tables first.
  await migrate(pool, new URL('../../migrations', import.meta.url).pathname, log);
  const outcome = await loadCatalogue(pool, file, { force: true });
  log.info({ file, games: outcome.games, removed: outcome.removed, checksum: outcome.checksum }, 'game catalogue reloaded');
} catch (err) {
  if (err instanceof CatalogueFileError) log.error({ file }, err.message);
  else log.error({ err, file }, 'game catalogue reload failed');
  process.exitCode = 1;
} finally {
  await pool.end();
}
