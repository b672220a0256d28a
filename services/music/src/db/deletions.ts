import { exec, exists, type Queryable } from '@chat/kit';

// pg_advisory_xact_lock(space, hash): music's lock space for a server's deletion, apart from the kit's (727_00x).
const SERVER_LOCK_SPACE = 727_101;

/**
 * A control's side of a server's lock: controls share it, applying a deletion holds it alone. Take
 * it before reading whether the channel is gone, in a statement of its own: a statement that waited
 * for the lock would read with the snapshot it took before waiting.
 */
export async function shareServerLock(tx: Queryable, serverId: string): Promise<void> {
  await exec(tx, 'SELECT pg_advisory_xact_lock_shared($1, hashtext($2))', [SERVER_LOCK_SPACE, serverId]);
}

/** The deletion's side: waits for the controls of the server in flight, and holds off new ones until commit. */
export async function holdServerLock(tx: Queryable, serverId: string): Promise<void> {
  await exec(tx, 'SELECT pg_advisory_xact_lock($1, hashtext($2))', [SERVER_LOCK_SPACE, serverId]);
}

/** Whether guilds deleted the channel or its server (as far as the deletions applied here say). */
export function isDeleted(db: Queryable, channelId: string, serverId: string): Promise<boolean> {
  return exists(db, 'SELECT 1 FROM deleted_channels WHERE channel_id = $1 UNION ALL SELECT 1 FROM deleted_servers WHERE server_id = $2', [
    channelId,
    serverId,
  ]);
}

export async function recordChannelDeleted(tx: Queryable, channelId: string): Promise<void> {
  await exec(tx, 'INSERT INTO deleted_channels (channel_id) VALUES ($1) ON CONFLICT (channel_id) DO NOTHING', [channelId]);
}

export async function recordServerDeleted(tx: Queryable, serverId: string): Promise<void> {
  await exec(tx, 'INSERT INTO deleted_servers (server_id) VALUES ($1) ON CONFLICT (server_id) DO NOTHING', [serverId]);
}

/** Removes the channel's player; its tracks go with it (ON DELETE CASCADE). Answers how many players went. */
export function deleteChannelPlayer(tx: Queryable, channelId: string): Promise<number> {
  return exec(tx, 'DELETE FROM players WHERE channel_id = $1', [channelId]);
}

/** Removes every player of the server, with their tracks. Answers how many went. */
export function deleteServerPlayers(tx: Queryable, serverId: string): Promise<number> {
  return exec(tx, 'DELETE FROM players WHERE server_id = $1', [serverId]);
}

/**
 * Forgets deletions applied more than `seconds` ago (by the database's clock, which also wrote
 * them): no control that passed its check before them is still in flight.
 */
export async function forgetDeletionsOlderThan(tx: Queryable, seconds: number): Promise<void> {
  await exec(tx, "DELETE FROM deleted_channels WHERE deleted_at < now() - $1 * interval '1 second'", [seconds]);
  await exec(tx, "DELETE FROM deleted_servers WHERE deleted_at < now() - $1 * interval '1 second'", [seconds]);
}
