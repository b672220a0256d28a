import { Buffer } from 'node:buffer';
import { z } from 'zod';
import { Id, Timestamp } from './common.ts';

/**
 * End-to-end encryption keys (X3DH-style prekeys). The server keeps public keys only: each device
 * of a user uploads an Ed25519 identity key, a signed X25519 prekey and a stock of one-time
 * X25519 prekeys; whoever may reach the user fetches a bundle per device, claiming one one-time
 * key of each. All keys travel as standard base64 of their raw bytes.
 */

/** A device id the client chooses: 1-64 of `[A-Za-z0-9_-]`. */
export const DeviceId = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be 1-64 of A-Z, a-z, 0-9, _ and -');

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Standard base64 of exactly `bytes` raw bytes. */
export const base64Bytes = (bytes: number, what: string) =>
  z
    .string()
    .regex(BASE64, `${what} must be base64`)
    .refine((s) => Buffer.from(s, 'base64').length === bytes, { error: `${what} must be ${bytes} bytes` });

/** A raw 32-byte public key (Ed25519 identity key or X25519 prekey). */
export const PublicKey = base64Bytes(32, 'a public key');
/** An Ed25519 signature: 64 bytes. */
export const Signature = base64Bytes(64, 'a signature');
/** Key ids are the client's own numbers, as in Signal (unsigned 31 bits). */
export const KeyId = z
  .number()
  .int()
  .min(0)
  .max(2 ** 31 - 1);

/** Most one-time keys one upload may carry, and most a device may hold. */
export const MAX_ONE_TIME_KEYS_PER_UPLOAD = 100;
export const MAX_ONE_TIME_KEYS_PER_DEVICE = 500;

export const SignedPreKey = z
  .object({
    keyId: KeyId,
    publicKey: PublicKey,
    /** The identity key's Ed25519 signature over the raw 32 bytes of `publicKey`. */
    signature: Signature,
  })
  .meta({ id: 'SignedPreKey' });

export const OneTimeKey = z.object({ keyId: KeyId, publicKey: PublicKey }).meta({ id: 'OneTimeKey' });

export const DeviceParams = z.object({ deviceId: DeviceId });

export const PutDeviceBody = z.object({ identityKey: PublicKey, signedPreKey: SignedPreKey });
export type PutDeviceBody = z.infer<typeof PutDeviceBody>;

export const Device = z
  .object({
    deviceId: DeviceId,
    identityKey: PublicKey,
    signedPreKey: SignedPreKey,
    oneTimeKeyCount: z.number().int().min(0),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  })
  .meta({ id: 'Device' });
export type Device = z.infer<typeof Device>;

export const UploadOneTimeKeysBody = z.object({
  keys: z
    .array(OneTimeKey)
    .min(1)
    .max(MAX_ONE_TIME_KEYS_PER_UPLOAD)
    .refine((keys) => new Set(keys.map((k) => k.keyId)).size === keys.length, { error: 'keyIds must be distinct' }),
});
export type UploadOneTimeKeysBody = z.infer<typeof UploadOneTimeKeysBody>;

/** How many one-time keys a device holds now. */
export const OneTimeKeyCount = z.object({ deviceId: DeviceId, oneTimeKeyCount: z.number().int().min(0) }).meta({ id: 'OneTimeKeyCount' });
export type OneTimeKeyCount = z.infer<typeof OneTimeKeyCount>;

/** One device of a user as a sender starting a session sees it; `oneTimeKey` is null when none was left. */
export const KeyBundle = z
  .object({
    deviceId: DeviceId,
    identityKey: PublicKey,
    signedPreKey: SignedPreKey,
    oneTimeKey: OneTimeKey.nullable(),
  })
  .meta({ id: 'KeyBundle' });
export type KeyBundle = z.infer<typeof KeyBundle>;

export const KEYS_SUBJECTS = {
  /** A device appeared, changed its identity key, or was removed: contacts' clients warn. */
  keysChanged: 'social.keys.changed',
  /** A claim left a device with few one-time keys: the owner's devices should upload more. */
  keysLow: 'social.keys.low',
} as const;

export const KeysChangedEvent = z.object({
  userId: Id,
  deviceId: DeviceId,
  change: z.enum(['added', 'identity_changed', 'removed']),
  /** The identity key now in force; null when the device was removed. */
  identityKey: PublicKey.nullable(),
});
export type KeysChangedEvent = z.infer<typeof KeysChangedEvent>;

export const KeysLowEvent = z.object({
  userId: Id,
  devices: z.array(z.object({ deviceId: DeviceId, remaining: z.number().int().min(0) })),
});
export type KeysLowEvent = z.infer<typeof KeysLowEvent>;
