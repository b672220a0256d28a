import { exec, IDEMPOTENCY_TTL_HOURS, maybeOne, type Queryable } from '@chat/kit';

/** What a registration's Idempotency-Key led to: an account, or a registration waiting for its code. */
export type RegistrationKeyTarget = { userId: string; pendingId: null } | { userId: null; pendingId: string };

export async function findRegistrationKey(db: Queryable, key: string): Promise<RegistrationKeyTarget | undefined> {
  const row = await maybeOne<{ user_id: string | null; pending_id: string | null }>(
    db,
    `SELECT user_id, pending_id FROM registration_keys
     WHERE key = $1 AND created_at > now() - make_interval(hours => $2)`,
    [key, IDEMPOTENCY_TTL_HOURS],
  );
  return row && ({ userId: row.user_id, pendingId: row.pending_id } as RegistrationKeyTarget);
}

/** False when the key is taken: by a registration that committed first, or by an expired one (replaced). */
export async function recordRegistrationKey(db: Queryable, key: string, target: RegistrationKeyTarget): Promise<boolean> {
  const written = await exec(
    db,
    `INSERT INTO registration_keys (key, user_id, pending_id) VALUES ($1, $2, $3)
     ON CONFLICT (key) DO UPDATE SET user_id = EXCLUDED.user_id, pending_id = EXCLUDED.pending_id, created_at = now()
       WHERE registration_keys.created_at <= now() - make_interval(hours => $4)`,
    [key, target.userId, target.pendingId, IDEMPOTENCY_TTL_HOURS],
  );
  return written === 1;
}

export function purgeRegistrationKeys(db: Queryable): Promise<number> {
  return exec(db, 'DELETE FROM registration_keys WHERE created_at <= now() - make_interval(hours => $1)', [IDEMPOTENCY_TTL_HOURS]);
}
