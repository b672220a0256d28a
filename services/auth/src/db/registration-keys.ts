import { exec, IDEMPOTENCY_TTL_HOURS, maybeOne, type Queryable } from '@chat/kit';

/** What a registration's Idempotency-Key led to: an account, or a registration waiting for its code. */
export type RegistrationKeyTarget = { userId: string; pendingId: null } | { userId: null; pendingId: string };

/**
 * Takes the key's lock until the transaction ends: registrations under one key queue on it, so
 * the one that waited reads what the one before it committed under the key.
 */
export async function lockRegistrationKey(tx: Queryable, key: string): Promise<void> {
  await exec(tx, "SELECT pg_advisory_xact_lock(hashtext('registration-key:' || $1))", [key]);
}

export async function findRegistrationKey(db: Queryable, key: string): Promise<RegistrationKeyTarget | undefined> {
  const row = await maybeOne<{ user_id: string | null; pending_id: string | null }>(
    db,
    `SELECT user_id, pending_id FROM registration_keys
     WHERE key = $1 AND created_at > now() - make_interval(hours => $2)`,
    [key, IDEMPOTENCY_TTL_HOURS],
  );
  return row && ({ userId: row.user_id, pendingId: row.pending_id } as RegistrationKeyTarget);
}

/**
 * Points the key at `target`, replacing what it led to before: only under the key's lock
 * (lockRegistrationKey), once that is known to be expired or gone.
 */
export async function recordRegistrationKey(tx: Queryable, key: string, target: RegistrationKeyTarget): Promise<void> {
  await exec(
    tx,
    `INSERT INTO registration_keys (key, user_id, pending_id) VALUES ($1, $2, $3)
     ON CONFLICT (key) DO UPDATE SET user_id = EXCLUDED.user_id, pending_id = EXCLUDED.pending_id, created_at = now()`,
    [key, target.userId, target.pendingId],
  );
}

export function purgeRegistrationKeys(db: Queryable): Promise<number> {
  return exec(db, 'DELETE FROM registration_keys WHERE created_at <= now() - make_interval(hours => $1)', [IDEMPOTENCY_TTL_HOURS]);
}
