import { exec, many, one, type Queryable } from '@chat/kit';
import { holdLock } from './sql.ts';

/**
 * Positions of channels among their siblings (same server and category; the uncategorised ones
 * form one group) and of categories in a server. The database holds them at 0..n-1 (deferred
 * unique constraints); every change takes the server's layout lock first, so concurrent moves
 * queue instead of computing from the same stale order, then the rows it will write.
 */

/** Serialises every change of a server's channel and category positions, across replicas. */
export async function lockLayout(db: Queryable, serverId: string): Promise<void> {
  await holdLock(db, 'layout', serverId);
}

/**
 * Locks the rows of these groups of the server's channels (null: the uncategorised ones), in id
 * order, before a layout change writes any of them. Every channel write also updates the server
 * row (the access-version trigger), so a change that shifted siblings after its first write would
 * hold the server row while waiting for a sibling that a plain rename holds while it waits for the
 * server row; with every row it will write locked first, it never waits once it holds the server row.
 */
export async function lockChannelGroups(db: Queryable, serverId: string, categoryIds: readonly (string | null)[]): Promise<void> {
  await db.query(
    `SELECT 1 FROM channels
     WHERE server_id = $1 AND (category_id = ANY($2::uuid[]) OR (category_id IS NULL AND $3))
     ORDER BY id FOR NO KEY UPDATE`,
    [serverId, categoryIds.filter((id) => id !== null), categoryIds.includes(null)],
  );
}

/** How many channels and categories the server has (Discord counts both towards one limit). */
export async function countChannelsAndCategories(db: Queryable, serverId: string): Promise<number> {
  const row = await one<{ n: number }>(
    db,
    `SELECT (SELECT count(*) FROM channels WHERE server_id = $1) + (SELECT count(*) FROM categories WHERE server_id = $1) AS n`,
    [serverId],
  );
  return Number(row.n);
}

/** The ids of a category's channels (null: the uncategorised ones) in position order. */
export async function channelOrder(db: Queryable, serverId: string, categoryId: string | null): Promise<string[]> {
  const rows = await many<{ id: string }>(
    db,
    'SELECT id FROM channels WHERE server_id = $1 AND category_id IS NOT DISTINCT FROM $2 ORDER BY position, id',
    [serverId, categoryId],
  );
  return rows.map((r) => r.id);
}

/**
 * Puts the listed channels into the category at positions 0..n-1 in the order given; answers the
 * ids whose category or position changed.
 */
export async function setChannelOrder(db: Queryable, serverId: string, categoryId: string | null, orderedIds: string[]): Promise<string[]> {
  const rows = await many<{ id: string }>(
    db,
    `UPDATE channels c SET position = o.ord - 1, category_id = $2
     FROM unnest($3::uuid[]) WITH ORDINALITY AS o(id, ord)
     WHERE c.id = o.id AND c.server_id = $1 AND (c.position <> o.ord - 1 OR c.category_id IS DISTINCT FROM $2)
     RETURNING c.id`,
    [serverId, categoryId, orderedIds],
  );
  return rows.map((r) => r.id);
}

/** Closes the gaps in a category's channel positions; answers the ids that moved. */
export async function compactChannels(db: Queryable, serverId: string, categoryId: string | null): Promise<string[]> {
  return setChannelOrder(db, serverId, categoryId, await channelOrder(db, serverId, categoryId));
}

/** Closes the gaps in a server's category positions; answers whether any moved. */
export async function compactCategories(db: Queryable, serverId: string): Promise<boolean> {
  const moved = await exec(
    db,
    `UPDATE categories k SET position = o.rn - 1
     FROM (SELECT id, row_number() OVER (ORDER BY position, id) AS rn FROM categories WHERE server_id = $1) o
     WHERE k.id = o.id AND k.position <> o.rn - 1`,
    [serverId],
  );
  return moved > 0;
}
