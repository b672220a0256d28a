import type { UserSummary } from '@chat/contracts';
import { many, maybeOne, type Queryable } from '@chat/kit';

/** A user of the read-model. */
export type KnownUser = { id: string; username: string; displayName: string; avatarUrl: string | null };

/** The user columns of a row that LEFT JOINs `users u` (null when auth's event has not arrived yet). */
export const USER_SUMMARY_COLUMNS = 'u.username, u.display_name, u.avatar_url';
type UserSummaryRow = { username: string | null; display_name: string | null; avatar_url: string | null };

/**
 * `LEFT JOIN users u` on the user whose id is `idColumn`, looked up by its key: LIMIT 1 keeps the
 * planner from joining the whole users table, which it hashes, every user of the platform once per
 * statement, when it has no statistics yet (right after a burst of registrations).
 */
export const joinUserByKey = (idColumn: string) =>
  `LEFT JOIN LATERAL (SELECT username, display_name, avatar_url FROM users WHERE id = ${idColumn} LIMIT 1) u ON true`;

/**
 * A user as social shows one. A user whose auth event has not reached us yet still appears, under
 * a placeholder name. Presence is a later issue, so `status` is always 'offline' for now.
 */
export function toUserSummary(id: string, row: UserSummaryRow | undefined): UserSummary {
  return {
    id,
    username: row?.username ?? 'unknown',
    displayName: row?.display_name ?? 'Unknown user',
    avatarUrl: row?.avatar_url ?? null,
    status: 'offline',
  };
}

export function knownToSummary(user: KnownUser): UserSummary {
  return { ...user, status: 'offline' };
}

type UserRow = { id: string; username: string; display_name: string; avatar_url: string | null };
const USER_COLUMNS = 'id, username, display_name, avatar_url';

const toKnownUser = (row: UserRow): KnownUser => ({
  id: row.id,
  username: row.username,
  displayName: row.display_name,
  avatarUrl: row.avatar_url,
});

export async function findUserById(db: Queryable, id: string): Promise<KnownUser | undefined> {
  const row = await maybeOne<UserRow>(db, `SELECT ${USER_COLUMNS} FROM users WHERE id = $1`, [id]);
  return row && toKnownUser(row);
}

/** The summary of any user id, known to the read-model or not. */
export async function summaryOf(db: Queryable, id: string): Promise<UserSummary> {
  const user = await findUserById(db, id);
  return user ? knownToSummary(user) : toUserSummary(id, undefined);
}

/** Usernames are unique ignoring case in auth; while a rename is in flight the newest holder wins. */
export async function findUserByUsername(db: Queryable, username: string): Promise<KnownUser | undefined> {
  const row = await maybeOne<UserRow>(
    db,
    `SELECT ${USER_COLUMNS} FROM users WHERE lower(username) = lower($1) ORDER BY version DESC LIMIT 1`,
    [username],
  );
  return row && toKnownUser(row);
}

/** The ids among `ids` that the read-model knows. */
export async function knownUserIds(db: Queryable, ids: string[]): Promise<Set<string>> {
  const rows = await many<{ id: string }>(db, 'SELECT id FROM users WHERE id = ANY($1::uuid[])', [ids]);
  return new Set(rows.map((r) => r.id));
}

/** The display names of these users by id, as a mention in an excerpt shows them (guilds' excerpts name users the same way). */
export async function displayNames(db: Queryable, ids: string[]): Promise<Record<string, string>> {
  if (ids.length === 0) return {};
  const rows = await many<{ id: string; display_name: string }>(db, 'SELECT id::text, display_name FROM users WHERE id = ANY($1::uuid[])', [
    ids,
  ]);
  return Object.fromEntries(rows.map((r) => [r.id, r.display_name]));
}
