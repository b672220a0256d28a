import { maybeOne, prepared, type Queryable } from '@chat/kit';
import { SERVER_COLUMNS, type ServerRow } from './servers.ts';

/** A server and what one user is in it: everything the permission algorithm needs, in one query. */
export type MembershipRow = ServerRow & {
  everyone_permissions: number;
  is_member: boolean;
  /** Highest role first. */
  role_ids: string[];
  /** int8[] arrives as strings. */
  role_permissions: string[];
  highest_position: number;
  /** The channel of the user's live voice state in this server, if any. */
  voice_channel_id: string | null;
  /** The version of the server's channel list (migrations/0212_channel_list_versions.sql), in this same snapshot. */
  channel_list_version: number;
};

// Every request of guilds starts with it: prepared, so that it is planned once per connection.
const MEMBERSHIP = prepared(
  `SELECT ${SERVER_COLUMNS}, e.permissions AS everyone_permissions, (m.user_id IS NOT NULL) AS is_member,
       COALESCE(r.role_ids, '{}') AS role_ids, COALESCE(r.role_permissions, '{}') AS role_permissions,
       COALESCE(r.highest_position, 0) AS highest_position,
       (SELECT v.channel_id FROM voice_states v WHERE v.user_id = $2 AND v.server_id = s.id AND v.expires_at > now()) AS voice_channel_id,
       COALESCE((SELECT cv.version FROM channel_list_versions cv WHERE cv.server_id = s.id), 0) AS channel_list_version
     FROM servers s
     JOIN roles e ON e.id = s.id
     LEFT JOIN members m ON m.server_id = s.id AND m.user_id = $2
     LEFT JOIN LATERAL (
       SELECT array_agg(ro.id::text ORDER BY ro.position DESC) AS role_ids, array_agg(ro.permissions ORDER BY ro.position DESC) AS role_permissions, max(ro.position) AS highest_position
       FROM member_roles mr JOIN roles ro ON ro.id = mr.role_id
       WHERE mr.server_id = s.id AND mr.user_id = $2
     ) r ON m.user_id IS NOT NULL
     WHERE s.id = $1`,
);

export function findMembership(db: Queryable, serverId: string, userId: string): Promise<MembershipRow | undefined> {
  return maybeOne<MembershipRow>(db, MEMBERSHIP, [serverId, userId]);
}

/**
 * The access version of the channel's server (see migrations/0210_one_statement_post.sql), or
 * undefined for an unknown channel. Read before the rows it covers, so that a change committed
 * meanwhile leaves the snapshot with an older version, which the post statement refuses.
 */
export async function accessVersionOfChannel(db: Queryable, channelId: string): Promise<number | undefined> {
  const row = await maybeOne<{ access_version: number }>(
    db,
    'SELECT s.access_version FROM channels c JOIN servers s ON s.id = c.server_id WHERE c.id = $1',
    [channelId],
  );
  return row?.access_version;
}
