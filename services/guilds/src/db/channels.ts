import type { Channel } from '@chat/contracts';
import { exec, many, maybeOne, one, type Queryable } from '@chat/kit';
import { setClause } from './sql.ts';

type ChannelRow = {
  id: string;
  server_id: string;
  category_id: string | null;
  name: string;
  topic: string | null;
  channel_type: 'text' | 'voice';
  position: number;
  is_nsfw: boolean;
  slowmode_seconds: number;
  owner_id: string | null;
  is_temporary: boolean;
  is_locked: boolean;
  is_hidden: boolean;
  user_limit: number;
  music_locked: boolean;
  created_at: string;
};

const COLUMNS = `id, server_id, category_id, name, topic, channel_type, position, is_nsfw, slowmode_seconds, owner_id,
  is_temporary, is_locked, is_hidden, user_limit, music_locked, created_at`;

export const toChannel = (r: ChannelRow): Channel => ({
  id: r.id,
  serverId: r.server_id,
  categoryId: r.category_id,
  name: r.name,
  topic: r.topic,
  channelType: r.channel_type,
  position: r.position,
  isNsfw: r.is_nsfw,
  slowmodeSeconds: r.slowmode_seconds,
  ownerId: r.owner_id,
  isTemporary: r.is_temporary,
  isLocked: r.is_locked,
  isHidden: r.is_hidden,
  userLimit: r.user_limit,
  musicLocked: r.music_locked,
  createdAt: r.created_at,
});

export interface NewChannel {
  id: string;
  serverId: string;
  categoryId: string | null;
  name: string;
  channelType: 'text' | 'voice';
  topic: string | null;
}

/** Inserts the channel last in its category (or among the uncategorised ones). */
export async function insertChannel(db: Queryable, c: NewChannel): Promise<Channel> {
  const row = await one<ChannelRow>(
    db,
    `INSERT INTO channels (id, server_id, category_id, name, channel_type, topic, position)
     VALUES ($1, $2, $3, $4, $5, $6,
       (SELECT COALESCE(max(position) + 1, 0) FROM channels WHERE server_id = $2 AND category_id IS NOT DISTINCT FROM $3))
     RETURNING ${COLUMNS}`,
    [c.id, c.serverId, c.categoryId, c.name, c.channelType, c.topic],
  );
  return toChannel(row);
}

export interface PlacedChannel extends NewChannel {
  position: number;
  isNsfw: boolean;
  slowmodeSeconds: number;
  userLimit: number;
}

/**
 * The channels of a server being created, each at the position given (the caller numbers them
 * 0..n-1 within each category), in one statement. Answers them in the order given.
 */
export async function insertPlacedChannels(db: Queryable, channels: PlacedChannel[]): Promise<Channel[]> {
  const rows = await many<ChannelRow>(
    db,
    `INSERT INTO channels (id, server_id, category_id, name, channel_type, topic, position, is_nsfw, slowmode_seconds, user_limit)
     SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::text[], $5::text[], $6::text[], $7::int[], $8::boolean[],
       $9::int[], $10::int[])
     RETURNING ${COLUMNS}`,
    [
      channels.map((c) => c.id),
      channels.map((c) => c.serverId),
      channels.map((c) => c.categoryId),
      channels.map((c) => c.name),
      channels.map((c) => c.channelType),
      channels.map((c) => c.topic),
      channels.map((c) => c.position),
      channels.map((c) => c.isNsfw),
      channels.map((c) => c.slowmodeSeconds),
      channels.map((c) => c.userLimit),
    ],
  );
  const byId = new Map(rows.map((r) => [r.id, toChannel(r)]));
  return channels.map((c) => byId.get(c.id) as Channel);
}

/**
 * Whether the channel exists, locked against deletion until the transaction ends, as holdCategory
 * does for categories: taken before any of its messages' rows, in the order a channel's deletion
 * takes them (the channel, then its messages), so that a write locking a message and then posting
 * into the channel cannot deadlock with it; a deletion under way is waited for (then not found).
 */
export async function holdChannel(db: Queryable, id: string): Promise<boolean> {
  return Boolean(await maybeOne(db, 'SELECT 1 FROM channels WHERE id = $1 FOR KEY SHARE', [id]));
}

export async function findChannel(db: Queryable, id: string): Promise<Channel | undefined> {
  const row = await maybeOne<ChannelRow>(db, `SELECT ${COLUMNS} FROM channels WHERE id = $1`, [id]);
  return row && toChannel(row);
}

/** The channels of these ids that exist (in any server). */
export async function findChannels(db: Queryable, ids: string[]): Promise<Channel[]> {
  const rows = await many<ChannelRow>(db, `SELECT ${COLUMNS} FROM channels WHERE id = ANY($1::uuid[])`, [ids]);
  return rows.map(toChannel);
}

/** The channel if it belongs to `serverId`: ids from another server are simply not found. */
export async function findServerChannel(db: Queryable, serverId: string, id: string): Promise<Channel | undefined> {
  const row = await maybeOne<ChannelRow>(db, `SELECT ${COLUMNS} FROM channels WHERE id = $1 AND server_id = $2`, [id, serverId]);
  return row && toChannel(row);
}

/** Channels ordered as a client shows them: by category position (uncategorised first), then position. */
export async function listChannels(db: Queryable, serverId: string): Promise<Channel[]> {
  const rows = await many<ChannelRow>(
    db,
    `SELECT ${COLUMNS} FROM channels c WHERE c.server_id = $1
     ORDER BY (SELECT k.position FROM categories k WHERE k.id = c.category_id) NULLS FIRST, c.position, c.id`,
    [serverId],
  );
  return rows.map(toChannel);
}

export type ChannelPatch = Partial<
  Pick<
    Channel,
    'name' | 'topic' | 'position' | 'categoryId' | 'isNsfw' | 'slowmodeSeconds' | 'userLimit' | 'isLocked' | 'isHidden' | 'musicLocked'
  >
>;

const PATCH_COLUMNS: { [K in keyof ChannelPatch]: string } = {
  name: 'name',
  topic: 'topic',
  position: 'position',
  categoryId: 'category_id',
  isNsfw: 'is_nsfw',
  slowmodeSeconds: 'slowmode_seconds',
  userLimit: 'user_limit',
  isLocked: 'is_locked',
  isHidden: 'is_hidden',
  musicLocked: 'music_locked',
};

export async function updateChannel(db: Queryable, id: string, patch: ChannelPatch): Promise<Channel> {
  const set = setClause(patch, PATCH_COLUMNS, 1);
  const row = set
    ? await one<ChannelRow>(db, `UPDATE channels SET ${set.sql} WHERE id = $1 RETURNING ${COLUMNS}`, [id, ...set.params], 'Channel')
    : await one<ChannelRow>(db, `SELECT ${COLUMNS} FROM channels WHERE id = $1`, [id], 'Channel');
  return toChannel(row);
}

export function deleteChannel(db: Queryable, id: string): Promise<number> {
  return exec(db, 'DELETE FROM channels WHERE id = $1', [id]);
}
