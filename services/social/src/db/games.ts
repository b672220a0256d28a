import type { Activity, Game } from '@chat/contracts';
import { exec, many, maybeOne, one, prepared, type Queryable } from '@chat/kit';

/** The game index and activities. */

type GameRow = {
  id: string;
  name: string;
  aliases: string[];
  executables: string[];
  cover_url: string | null;
  release_year: number | null;
};
const GAME_COLUMNS = 'g.id, g.name, g.aliases, g.executables, g.cover_url, g.release_year';

const toGame = (row: GameRow): Game => ({
  id: row.id,
  name: row.name,
  aliases: row.aliases,
  executables: row.executables,
  coverUrl: row.cover_url,
  releaseYear: row.release_year,
});

/** One game of the catalogue as the loader writes it. */
export type CatalogueGame = {
  id: string;
  slug: string;
  name: string;
  aliases: string[];
  executables: string[];
  coverUrl: string | null;
  releaseYear: number | null;
  /** Normalised search names: the name and each alias. */
  searchNames: string[];
};

/** Serialises loads of the catalogue (several replicas start at once; an operator may reload). */
export async function lockCatalogue(tx: Queryable): Promise<void> {
  await tx.query("SELECT pg_advisory_xact_lock(hashtextextended('social.game_catalogue', 0))");
}

export async function catalogueChecksum(db: Queryable): Promise<string | undefined> {
  return (await maybeOne<{ checksum: string }>(db, 'SELECT checksum FROM game_catalogue'))?.checksum;
}

export async function analyseCatalogue(db: Queryable): Promise<void> {
  await exec(db, 'ANALYZE games, game_names');
}

/** Ids of the games already known, by slug, so that a reload keeps them. */
export async function gameIdsBySlug(tx: Queryable): Promise<Map<string, string>> {
  const rows = await many<{ id: string; slug: string }>(tx, 'SELECT id, slug FROM games');
  return new Map(rows.map((r) => [r.slug, r.id]));
}

/**
 * Makes the tables hold exactly `games`: upserts each by slug, deletes the others (activities
 * keep their name and lose the link) and rebuilds the search names. Answers how many were removed.
 */
export async function replaceCatalogue(tx: Queryable, games: CatalogueGame[], checksum: string): Promise<number> {
  const column = <K extends keyof CatalogueGame>(key: K) => games.map((g) => g[key]);
  await exec(
    tx,
    `INSERT INTO games (id, slug, name, aliases, executables, cover_url, release_year)
     SELECT id, slug, name, ARRAY(SELECT jsonb_array_elements_text(aliases)), ARRAY(SELECT jsonb_array_elements_text(executables)),
       cover_url, release_year
     FROM unnest($1::uuid[], $2::text[], $3::text[], $4::jsonb[], $5::jsonb[], $6::text[], $7::int[])
       AS t (id, slug, name, aliases, executables, cover_url, release_year)
     ON CONFLICT (slug) DO UPDATE SET name = EXCLUDED.name, aliases = EXCLUDED.aliases, executables = EXCLUDED.executables,
       cover_url = EXCLUDED.cover_url, release_year = EXCLUDED.release_year`,
    [
      column('id'),
      column('slug'),
      column('name'),
      games.map((g) => JSON.stringify(g.aliases)),
      games.map((g) => JSON.stringify(g.executables)),
      column('coverUrl'),
      column('releaseYear'),
    ],
  );
  const removed = await exec(tx, 'DELETE FROM games WHERE NOT (slug = ANY($1::text[]))', [column('slug')]);
  await exec(tx, 'DELETE FROM game_names');
  const names = games.flatMap((g) => g.searchNames.map((name) => [g.id, name] as const));
  await exec(tx, 'INSERT INTO game_names (game_id, name) SELECT * FROM unnest($1::uuid[], $2::text[]) ON CONFLICT DO NOTHING', [
    names.map(([id]) => id),
    names.map(([, name]) => name),
  ]);
  await exec(
    tx,
    `INSERT INTO game_catalogue (checksum, games, loaded_at) VALUES ($1, $2, now())
     ON CONFLICT (singleton) DO UPDATE SET checksum = EXCLUDED.checksum, games = EXCLUDED.games, loaded_at = now()`,
    [checksum, games.length],
  );
  return removed;
}

/**
 * Games whose name or an alias matches `normalised`: an exact name first, then names that start
 * with it, then the rest by trigram similarity (or word similarity, so that a word of a long title
 * finds it); ties go to the shorter name. `%`, `%>` (word similarity, indexed column on the left)
 * and the prefix LIKE all use the trigram index.
 */
export async function searchGames(db: Queryable, normalised: string, limit: number): Promise<Game[]> {
  const prefix = `${normalised.replace(/[\\%_]/g, '\\$&')}%`;
  const rows = await many<GameRow>(
    db,
    `WITH hits AS (
       SELECT n.game_id,
         min(CASE WHEN n.name = $1 THEN 0 WHEN n.name LIKE $2 THEN 1 ELSE 2 END) AS rank,
         max(greatest(similarity(n.name, $1), word_similarity($1, n.name))) AS score
       FROM game_names n
       WHERE n.name % $1 OR n.name LIKE $2 OR n.name %> $1
       GROUP BY n.game_id
     )
     SELECT ${GAME_COLUMNS} FROM hits h JOIN games g ON g.id = h.game_id
     ORDER BY h.rank, h.score DESC, length(g.name), g.name
     LIMIT $3`,
    [normalised, prefix, limit],
  );
  return rows.map(toGame);
}

/** The first games by name (a search without a query). */
export async function firstGames(db: Queryable, limit: number): Promise<Game[]> {
  const rows = await many<GameRow>(db, `SELECT ${GAME_COLUMNS} FROM games g ORDER BY lower(g.name), g.id LIMIT $1`, [limit]);
  return rows.map(toGame);
}

export async function findGame(db: Queryable, id: string): Promise<Game | undefined> {
  const row = await maybeOne<GameRow>(db, `SELECT ${GAME_COLUMNS} FROM games g WHERE g.id = $1`, [id]);
  return row && toGame(row);
}

type ActivityRow = { user_id: string; game_id: string | null; name: string; started_at: string };
const toActivity = (row: ActivityRow): Activity => ({
  gameId: row.game_id,
  name: row.name,
  startedAt: new Date(row.started_at).toISOString(),
});

/**
 * Sets the user's activity; doing the same thing again keeps the original start time (a client
 * that repeats its state does not restart the clock). Answers the stored activity and whether it
 * changed.
 */
export async function upsertActivity(
  tx: Queryable,
  userId: string,
  activity: { gameId: string | null; name: string },
  startedAt: Date,
): Promise<{ activity: Activity; changed: boolean }> {
  const before = await maybeOne<ActivityRow>(tx, 'SELECT * FROM activities WHERE user_id = $1 FOR UPDATE', [userId]);
  if (before && before.game_id === activity.gameId && before.name === activity.name)
    return { activity: toActivity(before), changed: false };
  const row = await one<ActivityRow>(
    tx,
    `INSERT INTO activities (user_id, game_id, name, started_at) VALUES ($1, $2, $3, $4)
     ON CONFLICT (user_id) DO UPDATE SET game_id = EXCLUDED.game_id, name = EXCLUDED.name, started_at = EXCLUDED.started_at
     RETURNING *`,
    [userId, activity.gameId, activity.name, startedAt],
  );
  return { activity: toActivity(row), changed: true };
}

/** Answers whether there was an activity to clear. */
export async function deleteActivity(tx: Queryable, userId: string): Promise<boolean> {
  return (await exec(tx, 'DELETE FROM activities WHERE user_id = $1', [userId])) === 1;
}

/** Clears an activity that started at or before `at`; answers whether there was one. */
export async function deleteActivityStartedBy(tx: Queryable, userId: string, at: Date): Promise<boolean> {
  return (await exec(tx, 'DELETE FROM activities WHERE user_id = $1 AND started_at <= $2', [userId, at])) === 1;
}

const ACTIVITIES_OF = prepared('SELECT * FROM activities WHERE user_id = ANY($1::uuid[])');

/** The activities of these users (one query for a whole list), by user id. */
export async function activitiesOf(db: Queryable, userIds: string[]): Promise<Map<string, Activity>> {
  const rows = await many<ActivityRow>(db, ACTIVITIES_OF, [userIds]);
  return new Map(rows.map((r) => [r.user_id, toActivity(r)]));
}
