import type { Member, Membership } from '@chat/contracts';
import { exec, many, maybeOne, one, prepared, type Queryable } from '@chat/kit';
import { holdLock } from './sql.ts';

type MemberRow = {
  server_id: string;
  user_id: string;
  nickname: string | null;
  joined_at: string;
  role_ids: string[];
  username: string | null;
  display_name: string | null;
  avatar_url: string | null;
  badges: string[] | null;
  activity_game_id: string | null;
  activity_name: string | null;
  activity_started_at: string | null;
};

const toMember = (r: MemberRow): Member => ({
  ...(r.activity_name !== null && r.activity_started_at !== null
    ? { activity: { gameId: r.activity_game_id, name: r.activity_name, startedAt: new Date(r.activity_started_at).toISOString() } }
    : {}),
  serverId: r.server_id,
  userId: r.user_id,
  nickname: r.nickname,
  roleIds: r.role_ids,
  joinedAt: r.joined_at,
  // What others see is the gateway's: the domain fills it in for the whole list at once.
  status: 'offline',
  user:
    r.username === null
      ? null
      : {
          id: r.user_id,
          username: r.username,
          displayName: r.display_name ?? r.username,
          avatarUrl: r.avatar_url,
          badges: r.badges ?? [],
        },
});

/**
 * Members of `source` (a table or a subquery of members, aliased m) with their roles, user and
 * activity. The user is looked up by its key (LIMIT 1 keeps the planner from joining the whole
 * users table, which it hashes when it has no statistics yet).
 */
const selectMembersOf = (source: string) => `SELECT m.server_id, m.user_id, m.nickname, m.joined_at,
    COALESCE((SELECT array_agg(mr.role_id::text ORDER BY mr.role_id) FROM member_roles mr
              WHERE mr.server_id = m.server_id AND mr.user_id = m.user_id), '{}') AS role_ids,
    u.username, u.display_name, u.avatar_url, u.badges,
    a.game_id AS activity_game_id, a.name AS activity_name, a.started_at AS activity_started_at
  FROM ${source} m
  LEFT JOIN LATERAL (SELECT username, display_name, avatar_url, badges FROM users WHERE id = m.user_id LIMIT 1) u ON true
  LEFT JOIN activities a ON a.user_id = m.user_id`;

const SELECT_MEMBER = selectMembersOf('members');

/**
 * One page of members ($1 server, $2 the last user id of the previous page or null, $3 the limit):
 * the page is cut from the primary key first, and only its rows are joined to their users, roles
 * and activities. Joined first and cut after, the plan read every member of the server and probed
 * each one's activity (1,000 probes for a page of 100 of a server of 1,000).
 */
const memberPage = (after: string) =>
  prepared(`${selectMembersOf(`(SELECT * FROM members WHERE server_id = $1 AND ${after} ORDER BY user_id LIMIT $3)`)} ORDER BY m.user_id`);
/** Prepared, the first page and the next ones each with a statement (and so a plan) of their own. */
export const MEMBER_PAGE = { first: memberPage('$2::uuid IS NULL'), after: memberPage('user_id > $2') };

/** Serialises the ways a user comes into servers (creating one, joining one), across replicas. */
export async function lockMembershipsOf(db: Queryable, userId: string): Promise<void> {
  await holdLock(db, 'memberships', userId);
}

/** How many servers the user is a member of (owned ones included). */
export async function countServersOf(db: Queryable, userId: string): Promise<number> {
  return (await one<{ n: number }>(db, 'SELECT count(*)::int AS n FROM members WHERE user_id = $1', [userId])).n;
}

/** Adds the member; false when they already are one (the primary key decides races). */
export async function insertMember(db: Queryable, serverId: string, userId: string): Promise<boolean> {
  return (await exec(db, 'INSERT INTO members (server_id, user_id) VALUES ($1, $2) ON CONFLICT DO NOTHING', [serverId, userId])) === 1;
}

export async function isMemberOf(db: Queryable, serverId: string, userId: string): Promise<boolean> {
  return Boolean(await maybeOne(db, 'SELECT 1 FROM members WHERE server_id = $1 AND user_id = $2', [serverId, userId]));
}

/** Which of `others` share at least one server with `userId` (one query, both sides indexed). */
export async function usersSharingAServer(db: Queryable, userId: string, others: string[]): Promise<string[]> {
  const rows = await many<{ user_id: string }>(
    db,
    `SELECT DISTINCT o.user_id FROM members m JOIN members o ON o.server_id = m.server_id
     WHERE m.user_id = $1 AND o.user_id = ANY($2::uuid[]) AND o.user_id <> $1`,
    [userId, others],
  );
  return rows.map((r) => r.user_id);
}

export async function deleteMember(db: Queryable, serverId: string, userId: string): Promise<boolean> {
  return (await exec(db, 'DELETE FROM members WHERE server_id = $1 AND user_id = $2', [serverId, userId])) === 1;
}

export async function findMember(db: Queryable, serverId: string, userId: string): Promise<Member | undefined> {
  const row = await maybeOne<MemberRow>(db, `${SELECT_MEMBER} WHERE m.server_id = $1 AND m.user_id = $2`, [serverId, userId]);
  return row && toMember(row);
}

/** One page of members by user id; the primary key index serves it. */
export async function listMembers(db: Queryable, serverId: string, limit: number, after?: string): Promise<Member[]> {
  const rows = await many<MemberRow>(db, after ? MEMBER_PAGE.after : MEMBER_PAGE.first, [serverId, after ?? null, limit]);
  return rows.map(toMember);
}

export async function setNickname(db: Queryable, serverId: string, userId: string, nickname: string | null): Promise<boolean> {
  return (await exec(db, 'UPDATE members SET nickname = $3 WHERE server_id = $1 AND user_id = $2', [serverId, userId, nickname])) === 1;
}

export async function addMemberRole(db: Queryable, serverId: string, userId: string, roleId: string): Promise<boolean> {
  const sql = 'INSERT INTO member_roles (server_id, user_id, role_id) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING';
  return (await exec(db, sql, [serverId, userId, roleId])) === 1;
}

export async function removeMemberRole(db: Queryable, serverId: string, userId: string, roleId: string): Promise<boolean> {
  const sql = 'DELETE FROM member_roles WHERE server_id = $1 AND user_id = $2 AND role_id = $3';
  return (await exec(db, sql, [serverId, userId, roleId])) === 1;
}

/** Up to `limit` memberships after `after`, in key order (rpc.guilds.members.page). */
export function listMemberships(db: Queryable, after: Membership | undefined, limit: number): Promise<Membership[]> {
  return many(
    db,
    `SELECT server_id AS "serverId", user_id AS "userId" FROM members
     WHERE $1::uuid IS NULL OR (server_id, user_id) > ($1, $2::uuid) ORDER BY server_id, user_id LIMIT $3`,
    [after?.serverId ?? null, after?.userId ?? null, limit],
  );
}
