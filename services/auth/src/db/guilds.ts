import { exec, maybeOne, one, type Queryable } from '@chat/kit';

/** Auth's read-model of guilds' servers and members: just enough for the server-owner badge. */

/** Records the server's owner; answers the owner it had before (null when unknown). */
export async function upsertServerOwner(tx: Queryable, serverId: string, ownerId: string): Promise<string | null> {
  const before = await maybeOne<{ owner_id: string | null }>(tx, 'SELECT owner_id FROM guild_servers WHERE id = $1 FOR UPDATE', [serverId]);
  await exec(tx, `INSERT INTO guild_servers (id, owner_id) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET owner_id = EXCLUDED.owner_id`, [
    serverId,
    ownerId,
  ]);
  return before?.owner_id ?? null;
}

/** Forgets the server and its members; answers its owner (null when unknown). */
export async function deleteServer(tx: Queryable, serverId: string): Promise<string | null> {
  await exec(tx, 'DELETE FROM guild_members WHERE server_id = $1', [serverId]);
  const row = await maybeOne<{ owner_id: string | null }>(tx, 'DELETE FROM guild_servers WHERE id = $1 RETURNING owner_id', [serverId]);
  return row?.owner_id ?? null;
}

/** Adds the member (once) and counts them; answers the server's owner (null when not known yet). */
export async function addMember(tx: Queryable, serverId: string, userId: string): Promise<string | null> {
  const added = await exec(tx, 'INSERT INTO guild_members (server_id, user_id) VALUES ($1, $2) ON CONFLICT DO NOTHING', [serverId, userId]);
  const row = await one<{ owner_id: string | null }>(
    tx,
    `INSERT INTO guild_servers (id, members) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET members = guild_servers.members + $2
     RETURNING owner_id`,
    [serverId, added],
  );
  return row.owner_id;
}

/** Removes the member if known and counts them out; answers the server's owner (null when unknown). */
export async function removeMember(tx: Queryable, serverId: string, userId: string): Promise<string | null> {
  const removed = await exec(tx, 'DELETE FROM guild_members WHERE server_id = $1 AND user_id = $2', [serverId, userId]);
  const row = await maybeOne<{ owner_id: string | null }>(
    tx,
    'UPDATE guild_servers SET members = members - $2 WHERE id = $1 RETURNING owner_id',
    [serverId, removed],
  );
  return row?.owner_id ?? null;
}

/** Whether the user owns a server with at least `members` members. */
export async function ownsServerWithMembers(db: Queryable, userId: string, members: number): Promise<boolean> {
  const row = await one<{ owns: boolean }>(
    db,
    'SELECT EXISTS (SELECT 1 FROM guild_servers WHERE owner_id = $1 AND members >= $2) AS owns',
    [userId, members],
  );
  return row.owns;
}
