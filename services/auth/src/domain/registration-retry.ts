import type { RegisterBody } from '@chat/contracts';
import { AppError, unauthorized, withTx } from '@chat/kit';
import { lockPendingRegistration } from '../db/codes.ts';
import { findRegistrationKey } from '../db/registration-keys.ts';
import { findAccountWithPassword, holdPassword, toSelfUser } from '../db/users.ts';
import type { AuthDomainDeps } from '../deps.ts';
import type { Registration } from './accounts.ts';
import { badgePolicy } from './badges.ts';
import { passwordMatches } from './secrets.ts';
import { startSession } from './sessions.ts';

const sameText = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();

/**
 * A registration retried with its Idempotency-Key, its first answer lost to a 502 or 504: the same
 * username, email and password get what the first attempt got: the account, with a session of its
 * own (the first token pair is kept nowhere), or the registration still waiting for its code.
 * Any other body under the key answers 422, as the kit's idempotent routes do. Undefined when the
 * key is unknown, or what it led to is gone (a deleted account, a verified or expired
 * registration): the request then runs as a new one.
 */
export async function retriedRegistration(deps: AuthDomainDeps, key: string, body: RegisterBody): Promise<Registration | undefined> {
  const target = await findRegistrationKey(deps.pool, key);
  if (!target) return undefined;
  const account = target.userId === null ? undefined : await findAccountWithPassword(deps.pool, target.userId);
  const pending = target.pendingId === null ? undefined : await lockPendingRegistration(deps.pool, target.pendingId);
  const first = account ? { ...account.user, passwordHash: account.passwordHash } : pending;
  if (!first) return undefined;
  const sameRequest = sameText(first.username, body.username) && sameText(first.email, body.email);
  if (!(await passwordMatches(body.password, first.passwordHash)) || !sameRequest) {
    throw new AppError(422, 'This Idempotency-Key was already used for a different request');
  }
  if (!account) return { kind: 'pending', pendingId: first.id, replayed: true };
  const tokens = await withTx(deps.pool, async (tx) => {
    // As a login: a password reset that committed meanwhile opens nothing with the old password.
    if (!(await holdPassword(tx, account.user.id, account.passwordHash))) throw unauthorized('Wrong login or password');
    return startSession(deps, tx, account.user.id);
  });
  return { kind: 'account', pair: { ...tokens, user: toSelfUser(account.user, badgePolicy(deps.config)) }, replayed: true };
}
