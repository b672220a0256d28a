import {
  BADGES,
  type Badge,
  type BadgeId,
  FOUNDER_BADGE,
  type SeenStatus,
  type SelfUser,
  type UpdateProfileBody,
  type User,
  type UserEventData,
} from '@chat/contracts';
import { AppError, conflict, maybeOne, one, prepared, type Queryable } from '@chat/kit';
import type { z } from 'zod';

/** An account as this file hands it out: every column but the password hash, which stays here. */
export interface UserRow extends Record<string, unknown> {
  id: string;
  username: string;
  email: string;
  display_name: string;
  avatar_url: string | null;
  bio: string;
  status: z.infer<typeof User>['status'];
  custom_status: string;
  is_founder: boolean;
  email_verified_at: string | null;
  is_staff: boolean;
  is_server_owner: boolean;
  created_at: string;
}

const COLUMNS =
  'id, username, email, display_name, avatar_url, bio, status, custom_status, is_founder, email_verified_at, is_staff, is_server_owner, created_at';

/** What decides the badges that depend on settings rather than on the row alone. */
export type BadgePolicy = { earlySupporterBefore: Date | undefined };

/** The user's badge ids, in catalogue order. */
export function badgeIdsOf(row: UserRow, policy: BadgePolicy): BadgeId[] {
  const holds: Record<BadgeId, boolean> = {
    [FOUNDER_BADGE]: row.is_founder,
    staff: row.is_staff,
    early_supporter: policy.earlySupporterBefore !== undefined && new Date(row.created_at) < policy.earlySupporterBefore,
    verified_email: row.email_verified_at !== null,
    server_owner: row.is_server_owner,
  };
  return BADGES.map((b) => b.id).filter((id) => holds[id]);
}

export const badgesOf = (row: UserRow, policy: BadgePolicy): Badge[] => {
  const ids = new Set<string>(badgeIdsOf(row, policy));
  return BADGES.filter((b) => ids.has(b.id));
};

/**
 * What anyone may see of a user: never the email or the hash, and the status others see now
 * (`seen`, the gateway's: offline while no session is connected or when invisible), with the custom
 * status only while they are seen (the gateway clears it for offline too).
 */
export function toUser(row: UserRow, policy: BadgePolicy, seen: SeenStatus): z.input<typeof User> {
  return {
    id: row.id,
    username: row.username,
    displayName: row.display_name,
    avatarUrl: row.avatar_url,
    bio: row.bio,
    status: seen,
    customStatus: seen === 'offline' ? '' : row.custom_status,
    badges: badgeIdsOf(row, policy),
    createdAt: row.created_at,
  };
}

/** The account as its owner sees it: the status and custom status they chose. */
export function toSelfUser(row: UserRow, policy: BadgePolicy): z.input<typeof SelfUser> {
  return { ...toUser(row, policy, 'offline'), status: row.status, customStatus: row.custom_status, email: row.email };
}

export function toUserEvent(row: UserRow, policy: BadgePolicy): UserEventData {
  return {
    id: row.id,
    username: row.username,
    displayName: row.display_name,
    avatarUrl: row.avatar_url,
    badges: badgeIdsOf(row, policy),
  };
}

const TAKEN: Record<string, string> = { users_username_key: 'Username is taken', users_email_key: 'Email is already registered' };

/** Unique violations of users become the 409 that names what is taken. */
function explainTaken(err: unknown): unknown {
  const constraint = ((err as AppError).cause as { constraint?: string } | undefined)?.constraint;
  return err instanceof AppError && err.status === 409 && constraint && TAKEN[constraint] ? conflict(TAKEN[constraint]) : err;
}

export async function insertUser(
  tx: Queryable,
  user: {
    id: string;
    username: string;
    email: string;
    passwordHash: string;
    displayName: string;
    isFounder: boolean;
    emailVerified: boolean;
  },
): Promise<UserRow> {
  try {
    return await one<UserRow>(
      tx,
      `INSERT INTO users (id, username, email, password_hash, display_name, is_founder, email_verified_at)
       VALUES ($1, $2, $3, $4, $5, $6, CASE WHEN $7 THEN now() END) RETURNING ${COLUMNS}`,
      [user.id, user.username, user.email, user.passwordHash, user.displayName, user.isFounder, user.emailVerified],
    );
  } catch (err) {
    throw explainTaken(err);
  }
}

/** Takes one of the first `limit` founder slots if any is left; the row lock lasts until commit. */
export async function takeFounderSlot(tx: Queryable, limit: number): Promise<boolean> {
  const row = await maybeOne(tx, 'UPDATE founder_slots SET taken = taken + 1 WHERE taken < $1 RETURNING taken', [limit]);
  return row !== undefined;
}

/**
 * 409 before any work when the username is taken; with `allowTakenEmail` a taken email is reported instead of
 * refused (registration with email verification answers it like a new one).
 */
export async function assertUsernameAndEmailFree(
  db: Queryable,
  username: string,
  email: string,
  allowTakenEmail = false,
): Promise<{ emailTaken: boolean; ownerEmail?: string }> {
  const row = await maybeOne<{ username_taken: boolean; email_taken: boolean; owner_email: string | null }>(
    db,
    `SELECT bool_or(lower(username) = lower($1)) AS username_taken, bool_or(lower(email) = lower($2)) AS email_taken,
       max(email) FILTER (WHERE lower(email) = lower($2)) AS owner_email
     FROM users WHERE lower(username) = lower($1) OR lower(email) = lower($2)`,
    [username, email],
  );
  if (row?.username_taken) throw conflict(TAKEN.users_username_key as string);
  if (row?.email_taken && !allowTakenEmail) throw conflict(TAKEN.users_email_key as string);
  return { emailTaken: row?.email_taken === true, ownerEmail: row?.owner_email ?? undefined };
}

/**
 * The row by id or username (any case), read after any update of it in progress commits (FOR
 * SHARE), so what is answered is never older than an event already written about it.
 */
export function findUserForLookup(tx: Queryable, ref: { id: string } | { username: string }): Promise<UserRow | undefined> {
  return 'id' in ref
    ? maybeOne<UserRow>(tx, 'SELECT * FROM users WHERE id = $1 FOR SHARE', [ref.id])
    : maybeOne<UserRow>(tx, 'SELECT * FROM users WHERE lower(username) = lower($1) FOR SHARE', [ref.username]);
}

/** Up to `limit` users after `after`, in id order, read FOR SHARE as in the lookup. */
export async function findUsersPage(tx: Queryable, after: string | undefined, limit: number): Promise<UserRow[]> {
  const rows = await tx.query<UserRow>(`SELECT ${COLUMNS} FROM users WHERE $1::uuid IS NULL OR id > $1 ORDER BY id LIMIT $2 FOR SHARE`, [
    after ?? null,
    limit,
  ]);
  return rows.rows;
}

// Behind every users/@me: prepared, planned once per connection.
const USER_BY_ID = prepared(`SELECT ${COLUMNS} FROM users WHERE id = $1`);

export function findUserById(db: Queryable, id: string): Promise<UserRow | undefined> {
  return maybeOne<UserRow>(db, USER_BY_ID, [id]);
}

/**
 * The account a login names, with its password hash beside it (not inside the row) for the one
 * comparison that needs it. `login` is an email when it has an '@' (usernames cannot), a username otherwise.
 */
export async function findLoginCandidate(db: Queryable, login: string): Promise<{ user: UserRow; passwordHash: string } | undefined> {
  const column = login.includes('@') ? 'email' : 'username';
  return withPasswordHash(await maybeOne(db, `SELECT ${COLUMNS}, password_hash FROM users WHERE lower(${column}) = lower($1)`, [login]));
}

/** The account by id, with its password hash beside it, as findLoginCandidate. */
export async function findAccountWithPassword(db: Queryable, id: string): Promise<{ user: UserRow; passwordHash: string } | undefined> {
  return withPasswordHash(await maybeOne(db, `SELECT ${COLUMNS}, password_hash FROM users WHERE id = $1`, [id]));
}

function withPasswordHash(row: (UserRow & { password_hash: string }) | undefined) {
  if (!row) return undefined;
  const { password_hash: passwordHash, ...user } = row;
  return { user: user as UserRow, passwordHash };
}

export function findUserByEmail(db: Queryable, email: string): Promise<UserRow | undefined> {
  return maybeOne<UserRow>(db, `SELECT ${COLUMNS} FROM users WHERE lower(email) = lower($1)`, [email]);
}

export function lockUser(tx: Queryable, id: string): Promise<UserRow> {
  return one<UserRow>(tx, `SELECT ${COLUMNS} FROM users WHERE id = $1 FOR UPDATE`, [id], 'User');
}

const PROFILE_COLUMNS: Record<keyof UpdateProfileBody, string> = {
  displayName: 'display_name',
  avatarUrl: 'avatar_url',
  bio: 'bio',
  status: 'status',
  customStatus: 'custom_status',
};

/** Sets the given profile fields (only those present); columns come from the fixed map above. */
export function updateProfile(tx: Queryable, id: string, patch: UpdateProfileBody): Promise<UserRow> {
  const fields = (Object.keys(PROFILE_COLUMNS) as (keyof UpdateProfileBody)[]).filter((f) => patch[f] !== undefined);
  const sets = fields.map((f, i) => `${PROFILE_COLUMNS[f]} = $${i + 2}`);
  return one<UserRow>(
    tx,
    `UPDATE users SET ${[...sets, 'updated_at = now()'].join(', ')} WHERE id = $1 RETURNING ${COLUMNS}`,
    [id, ...fields.map((f) => patch[f])],
    'User',
  );
}

/**
 * Whether the account's password is still `passwordHash`, its row locked against a change until
 * the transaction ends: a reset or change waits for a login that checked the old password to
 * commit, and so revokes the session that login opened instead of missing it.
 */
export async function holdPassword(tx: Queryable, id: string, passwordHash: string): Promise<boolean> {
  const row = await maybeOne<{ password_hash: string }>(tx, 'SELECT password_hash FROM users WHERE id = $1 FOR SHARE', [id]);
  return row?.password_hash === passwordHash;
}

export async function updatePassword(tx: Queryable, id: string, passwordHash: string): Promise<void> {
  await one(tx, 'UPDATE users SET password_hash = $2, updated_at = now() WHERE id = $1 RETURNING id', [id, passwordHash], 'User');
}

/** Sets the staff flag; answers the row before and after (undefined for an unknown user). */
export async function setStaff(tx: Queryable, login: string, staff: boolean): Promise<{ before: UserRow; after: UserRow } | undefined> {
  const column = login.includes('@') ? 'email' : 'username';
  const before = await maybeOne<UserRow>(
    tx,
    `SELECT ${COLUMNS} FROM users WHERE lower(${column}) = lower($1) OR id::text = $1 FOR UPDATE`,
    [login],
  );
  if (!before) return undefined;
  const after = await one<UserRow>(tx, `UPDATE users SET is_staff = $2, updated_at = now() WHERE id = $1 RETURNING ${COLUMNS}`, [
    before.id,
    staff,
  ]);
  return { before, after };
}

/** Sets the server-owner flag; answers the row when it changed, undefined otherwise. */
export async function setServerOwner(tx: Queryable, userId: string, owner: boolean): Promise<UserRow | undefined> {
  return maybeOne<UserRow>(
    tx,
    `UPDATE users SET is_server_owner = $2, updated_at = now() WHERE id = $1 AND is_server_owner <> $2 RETURNING ${COLUMNS}`,
    [userId, owner],
  );
}
