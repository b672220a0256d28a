import { tooManyRequests } from '@chat/kit';
import * as loginFailures from '../db/login-failures.ts';
import type { AuthDomainDeps } from '../deps.ts';

/** Failed logins one login string may have over a rolling LOGIN_FAILURE_WINDOW_MS. */
export const LOGIN_FAILURE_LIMIT = 10;
export const LOGIN_FAILURE_WINDOW_MS = 15 * 60_000;

/**
 * Counts a login attempt before its password is checked, or refuses it (429 with Retry-After, no
 * password check, so a right password cannot tell itself apart during the lockout).
 *
 * Counted per login string as lower() folds it, not per account: an unknown login is counted and
 * refused exactly like a known one, so eleven tries do not tell which logins have accounts (per
 * account id for known logins, the 429 would show which ones exist). The price: an account's
 * username and email are two strings, so LOGIN_FAILURE_LIMIT tries each per window (20 in all).
 * Known accounts differ only in that their owner's right password, or a successful password reset,
 * clears the count early: visible to an attacker only if the owner acts within the attacker's window.
 * Anyone can lock a login out for the window by failing it on purpose; the owner still gets in
 * through a password reset, which clears both strings.
 */
export async function claimLoginAttempt(deps: Pick<AuthDomainDeps, 'pool'>, login: string): Promise<void> {
  const waitSeconds = await loginFailures.reserveLoginAttempt(deps.pool, login, LOGIN_FAILURE_WINDOW_MS, LOGIN_FAILURE_LIMIT);
  if (waitSeconds !== undefined) throw tooManyRequests(waitSeconds, 'Too many failed logins for this account; try again later');
}
