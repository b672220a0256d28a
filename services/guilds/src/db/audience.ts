import { many, maybeOne, type Queryable } from '@chat/kit';

/** What the permission function needs of every member of a server at once. */
export type MemberMaskRow = {
  user_id: string;
  role_ids: string[];
  /** int8[] arrives as strings. */
  role_permissions: string[];
  /** The channel of the member's live voice state in this server, if any (hidden channels). */
  voice_channel_id: string | null;
};

/** Every member of the server, or with `only` those named or holding one of the roles. */
export function listMemberMasks(
  db: Queryable,
  serverId: string,
  only?: { userIds: string[]; roleIds: string[] },
): Promise<MemberMaskRow[]> {
  return many<MemberMaskRow>(
    db,
    `SELECT m.user_id,
       COALESCE(array_agg(ro.id::text ORDER BY ro.position DESC) FILTER (WHERE ro.id IS NOT NULL), '{}') AS role_ids,
       COALESCE(array_agg(ro.permissions ORDER BY ro.position DESC) FILTER (WHERE ro.id IS NOT NULL), '{}') AS role_permissions,
       (SELECT v.channel_id FROM voice_states v WHERE v.user_id = m.user_id AND v.server_id = m.server_id AND v.expires_at > now())
         AS voice_channel_id
     FROM members m
     LEFT JOIN member_roles mr ON mr.server_id = m.server_id AND mr.user_id = m.user_id
     LEFT JOIN roles ro ON ro.id = mr.role_id
     WHERE m.server_id = $1 AND ($2::uuid[] IS NULL OR m.user_id = ANY($2::uuid[]) OR EXISTS (
       SELECT 1 FROM member_roles x WHERE x.server_id = m.server_id AND x.user_id = m.user_id AND x.role_id = ANY($3::uuid[])))
     GROUP BY m.user_id, m.server_id`,
    [serverId, only?.userIds ?? null, only?.roleIds ?? []],
  );
}

/** The owner and the @everyone mask of a server, or undefined for an unknown server. */
export function findServerBase(db: Queryable, serverId: string): Promise<{ owner_id: string; everyone_permissions: number } | undefined> {
  return maybeOne(
    db,
    'SELECT s.owner_id, e.permissions AS everyone_permissions FROM servers s JOIN roles e ON e.id = s.id WHERE s.id = $1',
    [serverId],
  );
}

export async function listServerIdsOfUser(db: Queryable, userId: string): Promise<string[]> {
  const rows = await many<{ server_id: string }>(db, 'SELECT server_id FROM members WHERE user_id = $1 ORDER BY joined_at, server_id', [
    userId,
  ]);
  return rows.map((r) => r.server_id);
}

/** Everyone who shares at least one server with the user, the user excluded. */
export async function listComemberIds(db: Queryable, userId: string): Promise<string[]> {
  const rows = await many<{ user_id: string }>(
    db,
    `SELECT DISTINCT o.user_id FROM members m JOIN members o ON o.server_id = m.server_id
     WHERE m.user_id = $1 AND o.user_id <> $1`,
    [userId],
  );
  return rows.map((r) => r.user_id);
}
