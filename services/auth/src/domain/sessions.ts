import { AUTH_SUBJECTS, type RefreshedTokens } from '@chat/contracts';
import { enqueueEvent, type Queryable, unauthorized, withTx } from '@chat/kit';
import { v7 as uuidv7 } from 'uuid';
import type { z } from 'zod';
import * as sessions from '../db/sessions.ts';
import type { AuthDomainDeps } from '../deps.ts';
import { signAccessToken } from './keys.ts';
import { hashRefreshToken, newRefreshToken } from './secrets.ts';

type Tokens = z.infer<typeof RefreshedTokens>;
const DAY_MS = 86_400_000;

/** Adds a refresh token to the session and signs an access token for it. */
async function issueTokens(deps: AuthDomainDeps, tx: Queryable, userId: string, sessionId: string): Promise<Tokens> {
  const refresh = newRefreshToken();
  await sessions.insertRefreshToken(tx, refresh.hash, sessionId, new Date(Date.now() + deps.config.REFRESH_TOKEN_TTL_DAYS * DAY_MS));
  const token = await signAccessToken(deps.keys, {
    userId,
    sessionId,
    issuer: deps.config.JWT_ISSUER,
    audience: deps.config.JWT_AUDIENCE,
    ttlSeconds: deps.config.ACCESS_TOKEN_TTL_SECONDS,
  });
  return { token, refreshToken: refresh.token };
}

/** A new session (refresh-token family) for the user, inside the caller's transaction. */
export async function startSession(deps: AuthDomainDeps, tx: Queryable, userId: string): Promise<Tokens> {
  const sessionId = uuidv7();
  await sessions.insertSession(tx, sessionId, userId);
  return issueTokens(deps, tx, userId, sessionId);
}

const REFRESH_REJECTED = 'Invalid or expired refresh token';

/**
 * Rotation: the presented token is used up and a new one joins its session. A used token
 * presented again means it was copied (or raced): the whole session is revoked.
 */
export async function refresh(deps: AuthDomainDeps, refreshToken: string): Promise<Tokens> {
  const hash = hashRefreshToken(refreshToken);
  const outcome = await withTx(deps.pool, async (tx) => {
    const state = await sessions.lockRefreshToken(tx, hash);
    if (!state || state.expired || state.revoked) return undefined;
    if (state.used) {
      await announceRevoked(tx, await sessions.revokeSession(tx, state.session_id, 'refresh token reuse'));
      deps.log.warn({ sessionId: state.session_id, userId: state.user_id }, 'refresh token reused: session revoked');
      return undefined;
    }
    await sessions.markRefreshTokenUsed(tx, hash);
    return issueTokens(deps, tx, state.user_id, state.session_id);
  });
  if (!outcome) throw unauthorized(REFRESH_REJECTED);
  return outcome;
}

/** Ends the caller's session of this refresh token; someone else's token, or an unknown one, changes nothing. */
export async function logout(deps: AuthDomainDeps, userId: string, refreshToken: string): Promise<void> {
  await withTx(deps.pool, async (tx) =>
    announceRevoked(tx, await sessions.revokeSessionOfToken(tx, hashRefreshToken(refreshToken), userId, 'logout')),
  );
}

/**
 * One `auth.session.revoked` per session just revoked, in the revoking transaction: every process
 * that verifies access tokens refuses that session's tokens from then on, not only at their `exp`.
 */
export async function announceRevoked(tx: Queryable, revoked: sessions.RevokedSession[]): Promise<void> {
  for (const session of revoked) await enqueueEvent(tx, AUTH_SUBJECTS.sessionRevoked, session);
}
