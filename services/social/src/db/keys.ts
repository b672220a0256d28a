import { Buffer } from 'node:buffer';
import type { Device, KeyBundle, OneTimeKeyCount, PutDeviceBody } from '@chat/contracts';
import { exec, many, maybeOne, one, type Queryable } from '@chat/kit';

/** Devices, their signed prekeys and one-time keys; keys are stored as raw bytes, shown as base64. */

const bytes = (base64: string): Buffer => Buffer.from(base64, 'base64');
const base64 = (raw: Buffer): string => raw.toString('base64');

type DeviceRow = {
  device_id: string;
  identity_key: Buffer;
  signed_prekey_id: number;
  signed_prekey: Buffer;
  signed_prekey_signature: Buffer;
};
type DeviceRecordRow = DeviceRow & { one_time_key_count: number; created_at: string; updated_at: string };

const signedPreKeyOf = (row: DeviceRow) => ({
  keyId: row.signed_prekey_id,
  publicKey: base64(row.signed_prekey),
  signature: base64(row.signed_prekey_signature),
});

const toDevice = (row: DeviceRecordRow): Device => ({
  deviceId: row.device_id,
  identityKey: base64(row.identity_key),
  signedPreKey: signedPreKeyOf(row),
  oneTimeKeyCount: row.one_time_key_count,
  createdAt: new Date(row.created_at).toISOString(),
  updatedAt: new Date(row.updated_at).toISOString(),
});

/**
 * The device's identity key as stored, locking the device until the transaction ends. A row lock
 * alone would lock nothing before the device's first PUT, so two first PUTs could both find no
 * row and the second would replace the first's identity unannounced: the advisory lock on (user,
 * device) serialises them, and the read, a statement of its own taken after it, sees the winner.
 */
export async function lockDevice(tx: Queryable, userId: string, deviceId: string): Promise<{ identityKey: string } | undefined> {
  await exec(tx, `SELECT pg_advisory_xact_lock(hashtextextended('key_devices:' || $1 || ':' || $2, 0))`, [userId, deviceId]);
  const row = await maybeOne<{ identity_key: Buffer }>(
    tx,
    'SELECT identity_key FROM key_devices WHERE user_id = $1 AND device_id = $2 FOR UPDATE',
    [userId, deviceId],
  );
  return row && { identityKey: base64(row.identity_key) };
}

/** Inserts or replaces the device's keys; answers whether the row is new. */
export async function upsertDevice(tx: Queryable, userId: string, deviceId: string, keys: PutDeviceBody): Promise<boolean> {
  const row = await one<{ inserted: boolean }>(
    tx,
    `INSERT INTO key_devices (user_id, device_id, identity_key, signed_prekey_id, signed_prekey, signed_prekey_signature)
     VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (user_id, device_id) DO UPDATE SET identity_key = EXCLUDED.identity_key,
       signed_prekey_id = EXCLUDED.signed_prekey_id, signed_prekey = EXCLUDED.signed_prekey,
       signed_prekey_signature = EXCLUDED.signed_prekey_signature, updated_at = now()
     RETURNING (xmax = 0) AS inserted`,
    [
      userId,
      deviceId,
      bytes(keys.identityKey),
      keys.signedPreKey.keyId,
      bytes(keys.signedPreKey.publicKey),
      bytes(keys.signedPreKey.signature),
    ],
  );
  return row.inserted;
}

export async function findDevice(db: Queryable, userId: string, deviceId: string): Promise<Device | undefined> {
  const row = await maybeOne<DeviceRecordRow>(
    db,
    `SELECT d.*, (SELECT count(*)::int FROM one_time_keys k WHERE k.user_id = d.user_id AND k.device_id = d.device_id) AS one_time_key_count
     FROM key_devices d WHERE d.user_id = $1 AND d.device_id = $2`,
    [userId, deviceId],
  );
  return row && toDevice(row);
}

export async function deleteDevice(tx: Queryable, userId: string, deviceId: string): Promise<boolean> {
  return (await exec(tx, 'DELETE FROM key_devices WHERE user_id = $1 AND device_id = $2', [userId, deviceId])) === 1;
}

export async function deleteOneTimeKeys(tx: Queryable, userId: string, deviceId: string): Promise<void> {
  await exec(tx, 'DELETE FROM one_time_keys WHERE user_id = $1 AND device_id = $2', [userId, deviceId]);
}

/** Of `keyIds`, those the device holds already. */
export async function heldKeyIds(db: Queryable, userId: string, deviceId: string, keyIds: number[]): Promise<number[]> {
  const rows = await many<{ key_id: number }>(
    db,
    'SELECT key_id FROM one_time_keys WHERE user_id = $1 AND device_id = $2 AND key_id = ANY($3::int[]) ORDER BY key_id',
    [userId, deviceId, keyIds],
  );
  return rows.map((r) => r.key_id);
}

export async function countOneTimeKeys(db: Queryable, userId: string, deviceId: string): Promise<number> {
  const row = await one<{ n: number }>(db, 'SELECT count(*)::int AS n FROM one_time_keys WHERE user_id = $1 AND device_id = $2', [
    userId,
    deviceId,
  ]);
  return row.n;
}

export async function insertOneTimeKeys(
  tx: Queryable,
  userId: string,
  deviceId: string,
  keys: { keyId: number; publicKey: string }[],
): Promise<void> {
  await exec(
    tx,
    `INSERT INTO one_time_keys (user_id, device_id, key_id, public_key)
     SELECT $1, $2, k.key_id, k.public_key FROM unnest($3::int[], $4::bytea[]) AS k (key_id, public_key)`,
    [userId, deviceId, keys.map((k) => k.keyId), keys.map((k) => bytes(k.publicKey))],
  );
}

/** Each device of the user with how many one-time keys it holds, by device id. */
export async function oneTimeKeyCounts(db: Queryable, userId: string): Promise<OneTimeKeyCount[]> {
  const rows = await many<{ device_id: string; n: number }>(
    db,
    `SELECT d.device_id, count(k.key_id)::int AS n FROM key_devices d
     LEFT JOIN one_time_keys k ON k.user_id = d.user_id AND k.device_id = d.device_id
     WHERE d.user_id = $1 GROUP BY d.device_id ORDER BY d.device_id`,
    [userId],
  );
  return rows.map((r) => ({ deviceId: r.device_id, oneTimeKeyCount: r.n }));
}

export type ClaimedBundle = KeyBundle & { remaining: number };

/**
 * A bundle per device of the user, each with one one-time key taken out of the table. The key is
 * picked under `FOR UPDATE SKIP LOCKED` and deleted in the same statement, so a key goes to exactly
 * one claim however many race: a claim that finds every key locked or gone gets none. `remaining`
 * is what the device holds after this claim (other claims in flight may lower it further).
 */
export async function claimBundles(db: Queryable, userId: string): Promise<ClaimedBundle[]> {
  const rows = await many<DeviceRow & { key_id: number | null; public_key: Buffer | null; remaining: number }>(
    db,
    `WITH picked AS (
       SELECT k.user_id, k.device_id, k.key_id FROM key_devices d
       CROSS JOIN LATERAL (
         SELECT user_id, device_id, key_id FROM one_time_keys
         WHERE user_id = d.user_id AND device_id = d.device_id
         ORDER BY key_id LIMIT 1 FOR UPDATE SKIP LOCKED
       ) k
       WHERE d.user_id = $1
     ), claimed AS (
       DELETE FROM one_time_keys o USING picked p
       WHERE o.user_id = p.user_id AND o.device_id = p.device_id AND o.key_id = p.key_id
       RETURNING o.device_id, o.key_id, o.public_key
     )
     SELECT d.device_id, d.identity_key, d.signed_prekey_id, d.signed_prekey, d.signed_prekey_signature,
       c.key_id, c.public_key,
       (SELECT count(*)::int FROM one_time_keys k WHERE k.user_id = d.user_id AND k.device_id = d.device_id)
         - (c.key_id IS NOT NULL)::int AS remaining
     FROM key_devices d LEFT JOIN claimed c ON c.device_id = d.device_id
     WHERE d.user_id = $1 ORDER BY d.device_id`,
    [userId],
  );
  return rows.map((row) => ({
    deviceId: row.device_id,
    identityKey: base64(row.identity_key),
    signedPreKey: signedPreKeyOf(row),
    oneTimeKey: row.key_id === null || row.public_key === null ? null : { keyId: row.key_id, publicKey: base64(row.public_key) },
    remaining: Math.max(0, row.remaining),
  }));
}

/**
 * Counts one bundle fetch of `callerId` in a fixed window of `windowMs` that starts at its first
 * fetch, and in the same round trip says how the caller stands with `targetId`: blocked either
 * way, or close (friends, or in a conversation together). Answers the fetches in the window (this
 * one included) and when the window started.
 */
export async function countFetchAndReach(
  db: Queryable,
  callerId: string,
  targetId: string,
  now: Date,
  windowMs: number,
): Promise<{ fetches: number; windowStartedAt: Date; blocked: boolean; close: boolean }> {
  const row = await one<{ fetches: number; window_started_at: string; blocked: boolean; close: boolean }>(
    db,
    `WITH counted AS (
       INSERT INTO key_fetch_windows AS w (caller_id, window_started_at, fetches) VALUES ($1, $3, 1)
       ON CONFLICT (caller_id) DO UPDATE SET
         fetches = CASE WHEN w.window_started_at <= $3 - make_interval(secs => $4 / 1000.0) THEN 1 ELSE w.fetches + 1 END,
         window_started_at = CASE WHEN w.window_started_at <= $3 - make_interval(secs => $4 / 1000.0) THEN $3 ELSE w.window_started_at END
       RETURNING fetches, window_started_at
     )
     SELECT counted.fetches, counted.window_started_at,
       EXISTS (SELECT 1 FROM blocks WHERE (blocker_id = $1 AND blocked_id = $2) OR (blocker_id = $2 AND blocked_id = $1)) AS blocked,
       EXISTS (SELECT 1 FROM friendships WHERE user_id = $1 AND friend_id = $2)
         OR EXISTS (SELECT 1 FROM conversation_participants a JOIN conversation_participants b ON b.conversation_id = a.conversation_id
                    WHERE a.user_id = $1 AND b.user_id = $2) AS close
     FROM counted`,
    [callerId, targetId, now, windowMs],
  );
  return { fetches: row.fetches, windowStartedAt: new Date(row.window_started_at), blocked: row.blocked, close: row.close };
}
