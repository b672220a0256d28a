import { exec, maybeOne, type Queryable } from '@chat/kit';

/** The columns every emailed code has, as the code rule (judgeCode) reads them. */
export interface StoredCode {
  codeHash: Buffer;
  codeExpiresAt: string;
  failedAttempts: number;
  /** Milliseconds since the code was last sent. */
  sinceSentMs: number;
  /** Issued while its account (reset) or address (verification) was past its day's wrong codes: 16 digits. */
  longCode: boolean;
}

const CODE_COLUMNS = `code_hash AS "codeHash", code_expires_at AS "codeExpiresAt", failed_attempts AS "failedAttempts",
  (extract(epoch FROM now() - code_sent_at) * 1000)::float8 AS "sinceSentMs", long_code AS "longCode"`;

export interface PendingRegistrationRow extends StoredCode, Record<string, unknown> {
  id: string;
  username: string;
  email: string;
  passwordHash: string;
  displayName: string;
  /** The email already had an account at registration: no code was sent, none can complete it. */
  emailTaken: boolean;
}

export async function insertPendingRegistration(
  db: Queryable,
  p: {
    id: string;
    username: string;
    email: string;
    passwordHash: string;
    displayName: string;
    codeHash: Buffer;
    codeExpiresAt: Date;
    emailTaken: boolean;
    longCode: boolean;
  },
): Promise<void> {
  await exec(
    db,
    `INSERT INTO pending_registrations (id, username, email, password_hash, display_name, code_hash, code_expires_at, email_taken, long_code)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
    [p.id, p.username, p.email, p.passwordHash, p.displayName, p.codeHash, p.codeExpiresAt, p.emailTaken, p.longCode],
  );
}

export function lockPendingRegistration(tx: Queryable, id: string): Promise<PendingRegistrationRow | undefined> {
  return maybeOne<PendingRegistrationRow>(
    tx,
    `SELECT id, username, email, password_hash AS "passwordHash", display_name AS "displayName", email_taken AS "emailTaken", ${CODE_COLUMNS}
     FROM pending_registrations WHERE id = $1 FOR UPDATE`,
    [id],
  );
}

export async function replacePendingCode(
  tx: Queryable,
  id: string,
  code: { codeHash: Buffer; codeExpiresAt: Date; longCode: boolean },
): Promise<void> {
  await exec(
    tx,
    'UPDATE pending_registrations SET code_hash = $2, code_expires_at = $3, long_code = $4, code_sent_at = now() WHERE id = $1',
    [id, code.codeHash, code.codeExpiresAt, code.longCode],
  );
}

/** Serialises the verifications of one address's registrations, so that its count of wrong codes is exact. */
export async function lockVerificationsOf(tx: Queryable, address: string): Promise<void> {
  await exec(tx, "SELECT pg_advisory_xact_lock(hashtextextended('verify:' || lower($1), 0))", [address]);
}

/** One wrong verification code, counted for its address (lower case) over a rolling day. */
export async function recordVerificationFailure(tx: Queryable, address: string): Promise<void> {
  await exec(tx, 'INSERT INTO verification_failures (address) VALUES (lower($1))', [address]);
}

/** Wrong verification codes for `address` within the last `windowMs`. */
export async function countVerificationFailures(db: Queryable, address: string, windowMs: number): Promise<number> {
  const row = await maybeOne<{ n: number }>(
    db,
    `SELECT count(*)::int AS n FROM verification_failures
     WHERE address = lower($1) AND failed_at > now() - make_interval(secs => $2 / 1000.0)`,
    [address, windowMs],
  );
  return row?.n ?? 0;
}

export async function countPendingFailure(tx: Queryable, id: string): Promise<void> {
  await exec(tx, 'UPDATE pending_registrations SET failed_attempts = failed_attempts + 1 WHERE id = $1', [id]);
}

export async function deletePendingRegistration(tx: Queryable, id: string): Promise<void> {
  await exec(tx, 'DELETE FROM pending_registrations WHERE id = $1', [id]);
}

export function lockPasswordReset(tx: Queryable, userId: string): Promise<StoredCode | undefined> {
  return maybeOne<StoredCode & Record<string, unknown>>(tx, `SELECT ${CODE_COLUMNS} FROM password_resets WHERE user_id = $1 FOR UPDATE`, [
    userId,
  ]);
}

/**
 * Issues a reset code to the account `userId` in one statement (the same for an id that names no
 * account, which issues nothing), and says which: the short code's hash, or the long one's when the
 * account had `maxFailures` wrong codes within `failureWindowMs`. None when its code was sent less
 * than `resendIntervalMs` ago, nor when the account's address had `mailsPerHour` mails within the
 * hour: the live code, whose mail went out, stays (a code that could not be mailed would replace it).
 * A new code replaces the previous one, with fresh attempts. The conflict takes the previous code's
 * row lock and reads it afresh, so of two concurrent requests only one issues.
 */
export async function issuePasswordReset(
  db: Queryable,
  r: {
    userId: string;
    codeHash: Buffer;
    longCodeHash: Buffer;
    codeExpiresAt: Date;
    resendIntervalMs: number;
    failureWindowMs: number;
    maxFailures: number;
    mailsPerHour: number;
  },
): Promise<{ longCode: boolean } | undefined> {
  return maybeOne<{ longCode: boolean }>(
    db,
    `INSERT INTO password_resets AS r (user_id, code_hash, code_expires_at, long_code)
     SELECT u.id, CASE WHEN g.guessed THEN $3::bytea ELSE $2::bytea END, $4, g.guessed
     FROM users u
     CROSS JOIN LATERAL (
       SELECT count(*) >= $7 AS guessed FROM password_reset_failures f
       WHERE f.user_id = u.id AND f.failed_at > now() - make_interval(secs => $6 / 1000.0)) g
     WHERE u.id = $1
       AND (SELECT count(*) FROM mail_sends m WHERE m.address = lower(u.email) AND m.sent_at > now() - interval '1 hour') < $8
     ON CONFLICT (user_id) DO UPDATE SET code_hash = EXCLUDED.code_hash, code_expires_at = EXCLUDED.code_expires_at,
       long_code = EXCLUDED.long_code, failed_attempts = 0, code_sent_at = now()
       WHERE r.code_sent_at <= now() - make_interval(secs => $5 / 1000.0)
     RETURNING r.long_code AS "longCode"`,
    [r.userId, r.codeHash, r.longCodeHash, r.codeExpiresAt, r.resendIntervalMs, r.failureWindowMs, r.maxFailures, r.mailsPerHour],
  );
}

export async function countResetFailure(tx: Queryable, userId: string): Promise<void> {
  await exec(tx, 'UPDATE password_resets SET failed_attempts = failed_attempts + 1 WHERE user_id = $1', [userId]);
}

export async function deletePasswordReset(tx: Queryable, userId: string): Promise<void> {
  await exec(tx, 'DELETE FROM password_resets WHERE user_id = $1', [userId]);
}

/** One wrong reset code, counted for the account over a rolling day. */
export async function recordResetFailure(tx: Queryable, userId: string): Promise<void> {
  await exec(tx, 'INSERT INTO password_reset_failures (user_id) VALUES ($1)', [userId]);
}

/** Wrong reset codes of the account within the last `windowMs`. */
export async function countResetFailures(db: Queryable, userId: string, windowMs: number): Promise<number> {
  const row = await maybeOne<{ n: number }>(
    db,
    `SELECT count(*)::int AS n FROM password_reset_failures WHERE user_id = $1 AND failed_at > now() - make_interval(secs => $2 / 1000.0)`,
    [userId, windowMs],
  );
  return row?.n ?? 0;
}

export async function clearResetFailures(tx: Queryable, userId: string): Promise<void> {
  await exec(tx, 'DELETE FROM password_reset_failures WHERE user_id = $1', [userId]);
}

/**
 * Counts a mail to `address` unless it already had `limit` within the last hour; true when it may
 * be sent. Concurrent calls for one address queue on an advisory lock, so the cap is exact.
 */
export async function claimMailSlot(tx: Queryable, address: string, limit: number): Promise<boolean> {
  const key = address.toLowerCase();
  await exec(tx, "SELECT pg_advisory_xact_lock(hashtext('mail:' || $1))", [key]);
  const row = await maybeOne<{ n: number }>(
    tx,
    "SELECT count(*)::int AS n FROM mail_sends WHERE address = $1 AND sent_at > now() - interval '1 hour'",
    [key],
  );
  if ((row?.n ?? 0) >= limit) return false;
  await exec(tx, 'INSERT INTO mail_sends (address) VALUES ($1)', [key]);
  return true;
}
