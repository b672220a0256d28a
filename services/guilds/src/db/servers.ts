import type { Server } from '@chat/contracts';
import { exec, type KeyPage, keysetPage, many, maybeOne, one, type Queryable } from '@chat/kit';
import { containsPattern, setClause } from './sql.ts';

export type ServerRow = {
  id: string;
  name: string;
  icon_url: string | null;
  banner_url: string | null;
  description: string | null;
  owner_id: string;
  is_public: boolean;
  require_approval: boolean;
  entrance_channel_id: string | null;
  afk_channel_id: string | null;
  jtc_channel_id: string | null;
  afk_timeout_seconds: number;
  tags: string[];
  dj_role_ids: string[];
  member_count: number;
  created_at: string;
};

export const SERVER_COLUMNS = `s.id, s.name, s.icon_url, s.banner_url, s.description, s.owner_id, s.is_public, s.require_approval,
  s.entrance_channel_id, s.afk_channel_id, s.jtc_channel_id, s.afk_timeout_seconds, s.tags, s.dj_role_ids, s.member_count, s.created_at`;

export function toServer(row: ServerRow): Server {
  return {
    id: row.id,
    name: row.name,
    iconUrl: row.icon_url,
    bannerUrl: row.banner_url,
    description: row.description,
    ownerId: row.owner_id,
    isPublic: row.is_public,
    requireApproval: row.require_approval,
    entranceChannelId: row.entrance_channel_id,
    afkChannelId: row.afk_channel_id,
    jtcChannelId: row.jtc_channel_id,
    afkTimeoutSeconds: row.afk_timeout_seconds,
    tags: row.tags,
    djRoleIds: row.dj_role_ids,
    createdAt: row.created_at,
  };
}

export interface NewServer {
  id: string;
  name: string;
  description: string | null;
  iconUrl: string | null;
  ownerId: string;
  isPublic: boolean;
  requireApproval: boolean;
  tags: string[];
}

export function insertServer(db: Queryable, s: NewServer): Promise<ServerRow> {
  return one<ServerRow>(
    db,
    `INSERT INTO servers AS s (id, name, description, icon_url, owner_id, is_public, require_approval, tags)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING ${SERVER_COLUMNS}`,
    [s.id, s.name, s.description, s.iconUrl, s.ownerId, s.isPublic, s.requireApproval, s.tags],
  );
}

/**
 * Names the server this transaction creates (until it ends): its roles, channels and overrides then
 * bump no access or channel-list version, as nobody can hold either of a server that does not exist
 * yet (migration 0213). Only for a server inserted in this very transaction.
 */
export async function markFreshServer(db: Queryable, id: string): Promise<void> {
  await exec(db, "SELECT set_config('guilds.fresh_server', $1, true)", [id]);
}

export function findServer(db: Queryable, id: string): Promise<ServerRow | undefined> {
  return maybeOne<ServerRow>(db, `SELECT ${SERVER_COLUMNS} FROM servers s WHERE s.id = $1`, [id]);
}

/** Locks the server row: joins, leaves and bans of one server take turns on it. */
/**
 * Takes the server row's lock that every change of who sees what takes anyway (its access version's
 * bump): such changes of one server then take turns, and none commits between two reads of ours.
 * Not FOR UPDATE: writes that only reference the server row (a voice join, an invite created) go on.
 */
export async function holdServerAccess(db: Queryable, id: string): Promise<void> {
  await db.query('SELECT 1 FROM servers WHERE id = $1 FOR NO KEY UPDATE', [id]);
}

export function lockServer(db: Queryable, id: string): Promise<ServerRow | undefined> {
  return maybeOne<ServerRow>(db, `SELECT ${SERVER_COLUMNS} FROM servers s WHERE s.id = $1 FOR UPDATE`, [id]);
}

/** One page of the user's servers, by server id. */
export async function listServersOfUser(db: Queryable, userId: string, page: KeyPage): Promise<ServerRow[]> {
  const k = keysetPage('s.id', page, 2);
  return k.finish(
    await many<ServerRow>(
      db,
      `SELECT ${SERVER_COLUMNS} FROM servers s JOIN members m ON m.server_id = s.id WHERE m.user_id = $1 AND ${k.where} ${k.orderLimit}`,
      [userId, ...k.params],
    ),
  );
}

export interface ServerPatch {
  name?: string;
  description?: string | null;
  iconUrl?: string | null;
  bannerUrl?: string | null;
  entranceChannelId?: string | null;
  afkChannelId?: string | null;
  jtcChannelId?: string | null;
  afkTimeoutSeconds?: number;
  isPublic?: boolean;
  requireApproval?: boolean;
  tags?: string[];
  djRoleIds?: string[];
}

const PATCH_COLUMNS: { [K in keyof ServerPatch]: string } = {
  name: 'name',
  description: 'description',
  iconUrl: 'icon_url',
  bannerUrl: 'banner_url',
  entranceChannelId: 'entrance_channel_id',
  afkChannelId: 'afk_channel_id',
  jtcChannelId: 'jtc_channel_id',
  afkTimeoutSeconds: 'afk_timeout_seconds',
  isPublic: 'is_public',
  requireApproval: 'require_approval',
  tags: 'tags',
  djRoleIds: 'dj_role_ids',
};

export async function updateServer(db: Queryable, id: string, patch: ServerPatch): Promise<ServerRow> {
  const set = setClause(patch, PATCH_COLUMNS, 1);
  if (!set) return one<ServerRow>(db, `SELECT ${SERVER_COLUMNS} FROM servers s WHERE s.id = $1`, [id], 'Server');
  return one<ServerRow>(db, `UPDATE servers s SET ${set.sql} WHERE s.id = $1 RETURNING ${SERVER_COLUMNS}`, [id, ...set.params], 'Server');
}

export function deleteServer(db: Queryable, id: string): Promise<number> {
  return exec(db, 'DELETE FROM servers WHERE id = $1', [id]);
}

export function addToMemberCount(db: Queryable, id: string, delta: number): Promise<number> {
  return exec(db, 'UPDATE servers SET member_count = member_count + $2 WHERE id = $1', [id, delta]);
}

export interface DiscoveryFilter {
  q?: string;
  tag?: string;
  limit: number;
  before?: string;
  beforeMemberCount?: number;
}

/**
 * Public servers, most members first, then newest id. `before` is the last server of the previous
 * page; the cursor is (`beforeMemberCount`, its id) when the client sends the count the page
 * showed, else its current (member_count, id), which repeats or skips servers when counts change
 * between pages. Only a public server serves as cursor by its current count: a private one's id
 * gives the same empty page as an unknown id, so nobody can learn that it exists or bisect its
 * member count (issue 16).
 */
export function discoverServers(db: Queryable, f: DiscoveryFilter): Promise<ServerRow[]> {
  return many<ServerRow>(
    db,
    `SELECT ${SERVER_COLUMNS} FROM servers s
     WHERE s.is_public
       AND ($1::text IS NULL OR s.name ILIKE $1 OR s.description ILIKE $1)
       AND ($2::text IS NULL OR EXISTS (SELECT 1 FROM unnest(s.tags) t WHERE lower(t) = lower($2)))
       AND ($3::uuid IS NULL OR (s.member_count, s.id) <
         (COALESCE($5::int, (SELECT c.member_count FROM servers c WHERE c.id = $3 AND c.is_public)), $3::uuid))
     ORDER BY s.member_count DESC, s.id DESC
     LIMIT $4`,
    [f.q ? containsPattern(f.q) : null, f.tag ?? null, f.before ?? null, f.limit, f.beforeMemberCount ?? null],
  );
}

/** Up to `limit` servers after `after` with their owners, in id order (rpc.guilds.servers.page). */
export function listServerOwners(db: Queryable, after: string | undefined, limit: number): Promise<{ id: string; ownerId: string }[]> {
  return many(db, 'SELECT id, owner_id AS "ownerId" FROM servers WHERE $1::uuid IS NULL OR id > $1 ORDER BY id LIMIT $2', [
    after ?? null,
    limit,
  ]);
}
