import { Buffer } from 'node:buffer';
import { generateKeyPairSync, type KeyObject, sign } from 'node:crypto';

/** A raw public key (32 bytes) in base64, as the keys API takes it. */
export const rawPublic = (key: KeyObject): string => Buffer.from(key.export({ format: 'jwk' }).x as string, 'base64url').toString('base64');

/** A device's upload: an Ed25519 identity key and an X25519 signed prekey, signed by node:crypto. */
export function deviceKeys() {
  const identity = generateKeyPairSync('ed25519');
  const prekey = Buffer.from(rawPublic(generateKeyPairSync('x25519').publicKey), 'base64');
  return {
    identityKey: rawPublic(identity.publicKey),
    signedPreKey: { keyId: 1, publicKey: prekey.toString('base64'), signature: sign(null, prekey, identity.privateKey).toString('base64') },
  };
}

/** Fresh one-time keys with the given ids. */
export const oneTimeKeys = (...ids: number[]) =>
  ids.map((keyId) => ({ keyId, publicKey: rawPublic(generateKeyPairSync('x25519').publicKey) }));
