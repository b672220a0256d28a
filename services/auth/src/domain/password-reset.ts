import { randomUUID } from 'node:crypto';
import { type Queryable, withTx } from '@chat/kit';
import * as codes from '../db/codes.ts';
import * as loginFailures from '../db/login-failures.ts';
import * as sessions from '../db/sessions.ts';
import * as users from '../db/users.ts';
import type { AuthDomainDeps } from '../deps.ts';
import { invalidCode } from './accounts.ts';
import { sendCapped } from './mail-limit.ts';
import { codeMail } from './mailer.ts';
import {
  CODE_RESEND_INTERVAL_MS,
  CODE_TTL_MS,
  hashEmailCode,
  hashPassword,
  judgeCode,
  newEmailCode,
  presentedCodeHashes,
} from './secrets.ts';
import { announceRevoked } from './sessions.ts';

const DAY_MS = 86_400_000;

/**
 * A known email gets a reset code (at most one a minute); an unknown one gets nothing. Both
 * answer the same after the same work: an unknown email's code is issued, in the same statement,
 * to an account id that does not exist, which issues nothing. The mail is sent after answering.
 */
export async function forgotPassword(deps: AuthDomainDeps, email: string): Promise<void> {
  const user = await users.findUserByEmail(deps.pool, email);
  const userId = user?.id ?? randomUUID();
  const code = newEmailCode();
  const issued = await codes.issuePasswordReset(deps.pool, {
    userId,
    codeHash: hashEmailCode(deps.keys.codeSecret, 'reset-password', userId, code),
    codeExpiresAt: new Date(Date.now() + CODE_TTL_MS),
    resendIntervalMs: CODE_RESEND_INTERVAL_MS,
    failureWindowMs: DAY_MS,
    maxFailures: deps.config.RESET_FAILURES_PER_DAY,
  });
  if (!issued || !user) return;
  sendCapped(deps, codeMail(user.email, 'reset-password', code)).catch((err) => {
    deps.log.error({ err, userId: user.id }, 'password reset email not sent');
  });
}

/**
 * Each reset code allows 5 tries, and a new code starts afresh: the account's wrong codes over a
 * rolling day bound the guessing (RESET_FAILURES_PER_DAY, default 20: one chance in 50,000 a day
 * for a 6-digit code). Past it, no code is issued or accepted until the oldest failure is a day old.
 */
function resetLockedOut(deps: AuthDomainDeps, db: Queryable, userId: string): Promise<boolean> {
  return codes.countResetFailures(db, userId, DAY_MS).then((n) => n >= deps.config.RESET_FAILURES_PER_DAY);
}

/**
 * A right code sets the password, uses the code up and ends every session of the account. An
 * unknown email looks for the code of an id that names no account, so it sends the same statements
 * as a known email without a code pending (as forgotPassword): the round trips do not tell whether
 * the email has an account.
 */
export async function resetPassword(deps: AuthDomainDeps, email: string, code: string, password: string): Promise<void> {
  const user = await users.findUserByEmail(deps.pool, email);
  const userId = user?.id ?? randomUUID();
  // Hashed before looking at the code, so a right and a wrong code take the same time.
  const passwordHash = await hashPassword(password);
  const done = await withTx(deps.pool, async (tx) => {
    const stored = await codes.lockPasswordReset(tx, userId);
    if (!stored) return false;
    if (await resetLockedOut(deps, tx, userId)) return false;
    const verdict = judgeCode(stored, presentedCodeHashes(deps.keys.codeSecrets, 'reset-password', userId, code));
    if (verdict === 'wrong') {
      await codes.countResetFailure(tx, userId);
      await codes.recordResetFailure(tx, userId);
    }
    if (verdict !== 'ok') return false;
    await users.updatePassword(tx, userId, passwordHash);
    await codes.deletePasswordReset(tx, userId);
    await codes.clearResetFailures(tx, userId);
    // The owner proved the mailbox: logins locked out by someone's guessing open again.
    await loginFailures.clearAccountLoginFailures(tx, userId);
    await announceRevoked(tx, await sessions.revokeUserSessions(tx, userId, 'password reset'));
    return true;
  });
  if (!done) throw invalidCode();
}
