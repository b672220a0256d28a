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
  CODE_FAILURE_WINDOW_MS,
  CODE_RESEND_INTERVAL_MS,
  CODE_TTL_MS,
  hashEmailCode,
  hashPassword,
  judgeCode,
  LONG_CODE_DIGITS,
  newEmailCode,
  presentedCodeHashes,
} from './secrets.ts';
import { announceRevoked } from './sessions.ts';

/**
 * A known email gets a reset code (at most one a minute, and only while its mail can go out); an
 * unknown one gets nothing. Both answer the same after the same work: an unknown email's code is
 * issued, in the same statement, to an account id that does not exist, which issues nothing. The
 * mail is sent after answering.
 */
export async function forgotPassword(deps: AuthDomainDeps, email: string): Promise<void> {
  const user = await users.findUserByEmail(deps.pool, email);
  const userId = user?.id ?? randomUUID();
  const code = newEmailCode();
  const longCode = newEmailCode(LONG_CODE_DIGITS);
  const hashOf = (text: string) => hashEmailCode(deps.keys.codeSecret, 'reset-password', userId, text);
  const issued = await codes.issuePasswordReset(deps.pool, {
    userId,
    codeHash: hashOf(code),
    longCodeHash: hashOf(longCode),
    codeExpiresAt: new Date(Date.now() + CODE_TTL_MS),
    resendIntervalMs: CODE_RESEND_INTERVAL_MS,
    failureWindowMs: CODE_FAILURE_WINDOW_MS,
    maxFailures: deps.config.RESET_FAILURES_PER_DAY,
    mailsPerHour: deps.config.MAILS_PER_ADDRESS_PER_HOUR,
  });
  if (!issued || !user) return;
  sendCapped(deps, codeMail(user.email, 'reset-password', issued.longCode ? longCode : code)).catch((err) => {
    deps.log.error({ err, userId: user.id }, 'password reset email not sent');
  });
}

/**
 * Each 6-digit code allows 5 tries, and a new code starts afresh: the account's wrong codes over a
 * rolling day bound the guessing (RESET_FAILURES_PER_DAY, default 20: one chance in 50,000 a day).
 * Past it, no 6-digit code is accepted until the oldest failure is a day old; the codes issued
 * meanwhile are 16 digits, accepted however many wrong tries came, so that whoever guesses cannot
 * also keep the owner from resetting (a try limit per code would let them spend the owner's code).
 */
function resetLockedOut(deps: AuthDomainDeps, db: Queryable, userId: string): Promise<boolean> {
  return codes.countResetFailures(db, userId, CODE_FAILURE_WINDOW_MS).then((n) => n >= deps.config.RESET_FAILURES_PER_DAY);
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
    if (!stored.longCode && (await resetLockedOut(deps, tx, userId))) return false;
    const presented = presentedCodeHashes(deps.keys.codeSecrets, 'reset-password', userId, code);
    const verdict = judgeCode(stored, presented);
    // Past the day's count a wrong 16-digit code adds nothing: it is not recorded, so that the rows stay few.
    if (verdict === 'wrong' && !stored.longCode) {
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
