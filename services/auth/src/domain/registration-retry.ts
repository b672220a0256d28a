import type { RegisterBody } from '@chat/contracts';
import { AppError, type Queryable, unauthorized, withTx } from '@chat/kit';
import { lockPendingRegistration } from '../db/codes.ts';
import { clearAccountLoginFailures } from '../db/login-failures.ts';
import { findRegistrationKey, lockRegistrationKey } from '../db/registration-keys.ts';
import { findAccountWithPassword, holdPassword, toSelfUser } from '../db/users.ts';
import type { AuthDomainDeps } from '../deps.ts';
import type { Registration } from './accounts.ts';
import { badgePolicy } from './badges.ts';
import { claimLoginAttempt } from './login-limit.ts';
import { passwordMatches } from './secrets.ts';
import { startSession } from './sessions.ts';

const sameText = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();

/** What the registration under a key left and is still there: the account, or the registration waiting for its code. */
async function registrationUnderKey(db: Queryable, key: string) {
  const target = await findRegistrationKey(db, key);
  if (!target) return undefined;
  const account = target.userId === null ? undefined : await findAccountWithPassword(db, target.userId);
  const pending = target.pendingId === null ? undefined : await lockPendingRegistration(db, target.pendingId);
  const first = account ? { ...account.user, passwordHash: account.passwordHash } : pending;
  return first && { first, account };
}

/**
 * Takes the key's lock for the rest of the transaction, and answers whether a new registration
 * may be made under the key. Not when a registration under it is still there, such as the one
 * this request just waited for: this request is then its retry (retriedRegistration).
 */
export async function holdRegistrationKey(tx: Queryable, key: string): Promise<boolean> {
  await lockRegistrationKey(tx, key);
  return (await registrationUnderKey(tx, key)) === undefined;
}

/**
 * A registration retried with its Idempotency-Key, its first answer lost to a 502 or 504: the same
 * username, email and password get what the first attempt got: the account, with a session of its
 * own (the first token pair is kept nowhere), or the registration still waiting for its code.
 * Any other body under the key answers 422, as the kit's idempotent routes do. Undefined when the
 * key is unknown, or what it led to is gone (a deleted account, a verified or expired
 * registration): the request then runs as a new one.
 *
 * Proving the password is a login: each retry counts against the lockout of its username and of
 * its email (login-limit.ts) and is refused with login's 429 while either is locked, so a key is
 * no way around the lockout. A wrong password counts as another body does, and both answer 422.
 */
export async function retriedRegistration(deps: AuthDomainDeps, key: string, body: RegisterBody): Promise<Registration | undefined> {
  const found = await registrationUnderKey(deps.pool, key);
  if (!found) return undefined;
  const { first, account } = found;
  for (const login of [body.username, body.email]) await claimLoginAttempt(deps, login);
  const sameRequest = sameText(first.username, body.username) && sameText(first.email, body.email);
  if (!(await passwordMatches(body.password, first.passwordHash)) || !sameRequest) {
    throw new AppError(422, 'This Idempotency-Key was already used for a different request');
  }
  if (!account) return { kind: 'pending', pendingId: first.id, replayed: true };
  const tokens = await withTx(deps.pool, async (tx) => {
    // As a login: a password reset that committed meanwhile opens nothing with the old password.
    if (!(await holdPassword(tx, account.user.id, account.passwordHash))) throw unauthorized('Wrong login or password');
    await clearAccountLoginFailures(tx, account.user.id);
    return startSession(deps, tx, account.user.id);
  });
  return { kind: 'account', pair: { ...tokens, user: toSelfUser(account.user, badgePolicy(deps.config)) }, replayed: true };
}
