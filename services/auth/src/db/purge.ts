import { exec, type Queryable } from '@chat/kit';
import { purgeRegistrationKeys } from './registration-keys.ts';

/** How many rows of each kind one purge removed. */
export interface PurgeCounts {
  pendingRegistrations: number;
  refreshTokens: number;
  sessions: number;
  passwordResets: number;
  resetFailures: number;
  verificationFailures: number;
  mailSends: number;
  loginFailures: number;
  registrationKeys: number;
}

/**
 * Removes what no rule reads any more, each by the rule that made it useless:
 * - a pending registration a day after it was started (its codes live 15 minutes; resend works
 *   within that day);
 * - a refresh token once expired: an expired token is refused whether or not it was used, so it
 *   is no longer needed to recognise reuse;
 * - a session with no refresh token left that was revoked, or started longer ago than a refresh
 *   token lives (its access tokens expired long before);
 * - a reset code a day after it expired; wrong-code counts after a day; mail counts after an hour;
 *   failed logins once older than their window (`loginFailureWindowMs`); a registration's
 *   Idempotency-Key after a day, as the kit's keys.
 */
export async function purgeExpired(db: Queryable, refreshTtlDays: number, loginFailureWindowMs: number): Promise<PurgeCounts> {
  const pendingRegistrations = await exec(db, "DELETE FROM pending_registrations WHERE created_at < now() - interval '1 day'");
  const refreshTokens = await exec(db, 'DELETE FROM refresh_tokens WHERE expires_at < now()');
  const sessions = await exec(
    db,
    `DELETE FROM sessions s
     WHERE (s.revoked_at IS NOT NULL OR s.created_at < now() - make_interval(days => $1))
       AND NOT EXISTS (SELECT 1 FROM refresh_tokens t WHERE t.session_id = s.id)`,
    [refreshTtlDays],
  );
  const passwordResets = await exec(db, "DELETE FROM password_resets WHERE code_expires_at < now() - interval '1 day'");
  const resetFailures = await exec(db, "DELETE FROM password_reset_failures WHERE failed_at < now() - interval '1 day'");
  const verificationFailures = await exec(db, "DELETE FROM verification_failures WHERE failed_at < now() - interval '1 day'");
  const mailSends = await exec(db, "DELETE FROM mail_sends WHERE sent_at < now() - interval '1 hour'");
  const loginFailures = await exec(db, 'DELETE FROM login_failures WHERE failed_at < now() - make_interval(secs => $1 / 1000.0)', [
    loginFailureWindowMs,
  ]);
  const registrationKeys = await purgeRegistrationKeys(db);
  return {
    pendingRegistrations,
    refreshTokens,
    sessions,
    passwordResets,
    resetFailures,
    verificationFailures,
    mailSends,
    loginFailures,
    registrationKeys,
  };
}
