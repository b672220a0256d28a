import { exec, many, maybeOne, type Queryable } from '@chat/kit';

export async function insertSession(tx: Queryable, id: string, userId: string): Promise<void> {
  await exec(tx, 'INSERT INTO sessions (id, user_id) VALUES ($1, $2)', [id, userId]);
}

export async function insertRefreshToken(tx: Queryable, hash: Buffer, sessionId: string, expiresAt: Date): Promise<void> {
  await exec(tx, 'INSERT INTO refresh_tokens (token_hash, session_id, expires_at) VALUES ($1, $2, $3)', [hash, sessionId, expiresAt]);
}

export interface RefreshTokenState extends Record<string, unknown> {
  session_id: string;
  user_id: string;
  expired: boolean;
  used: boolean;
  revoked: boolean;
}

/**
 * The state of a presented refresh token, its row locked until commit: of two concurrent
 * refreshes with one token, the second waits here and then sees it used.
 */
export function lockRefreshToken(tx: Queryable, hash: Buffer): Promise<RefreshTokenState | undefined> {
  return maybeOne<RefreshTokenState>(
    tx,
    `SELECT t.session_id, s.user_id, t.expires_at <= now() AS expired, t.used_at IS NOT NULL AS used, s.revoked_at IS NOT NULL AS revoked
     FROM refresh_tokens t JOIN sessions s ON s.id = t.session_id
     WHERE t.token_hash = $1 FOR UPDATE OF t`,
    [hash],
  );
}

export async function markRefreshTokenUsed(tx: Queryable, hash: Buffer): Promise<void> {
  await exec(tx, 'UPDATE refresh_tokens SET used_at = now() WHERE token_hash = $1', [hash]);
}

/** A session this statement revoked (it was live until now). */
export interface RevokedSession extends Record<string, unknown> {
  sessionId: string;
  userId: string;
}

const REVOKED = 'RETURNING id AS "sessionId", user_id AS "userId"';

export function revokeSession(db: Queryable, sessionId: string, reason: string): Promise<RevokedSession[]> {
  return many<RevokedSession>(
    db,
    `UPDATE sessions SET revoked_at = now(), revoked_reason = $2 WHERE id = $1 AND revoked_at IS NULL ${REVOKED}`,
    [sessionId, reason],
  );
}

/** Revokes the session a refresh token belongs to, only when it is `userId`'s. */
export function revokeSessionOfToken(db: Queryable, hash: Buffer, userId: string, reason: string): Promise<RevokedSession[]> {
  return many<RevokedSession>(
    db,
    `UPDATE sessions SET revoked_at = now(), revoked_reason = $3
     WHERE id = (SELECT session_id FROM refresh_tokens WHERE token_hash = $1) AND user_id = $2 AND revoked_at IS NULL ${REVOKED}`,
    [hash, userId, reason],
  );
}

export function revokeUserSessions(db: Queryable, userId: string, reason: string): Promise<RevokedSession[]> {
  return many<RevokedSession>(
    db,
    `UPDATE sessions SET revoked_at = now(), revoked_reason = $2 WHERE user_id = $1 AND revoked_at IS NULL ${REVOKED}`,
    [userId, reason],
  );
}
