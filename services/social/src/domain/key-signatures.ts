import { Buffer } from 'node:buffer';
import { createPublicKey, verify } from 'node:crypto';

/** DER prefix of an Ed25519 SubjectPublicKeyInfo (RFC 8410): what precedes the raw 32-byte key. */
const ED25519_SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

/**
 * Whether `signature` (base64, 64 bytes) is the Ed25519 signature of the raw bytes of `signedKey`
 * (base64) by `identityKey` (base64 of a raw 32-byte Ed25519 public key). A key that is not a
 * valid Ed25519 point verifies nothing.
 */
export function verifiesSignedPreKey(identityKey: string, signedKey: string, signature: string): boolean {
  try {
    const key = createPublicKey({
      key: Buffer.concat([ED25519_SPKI_PREFIX, Buffer.from(identityKey, 'base64')]),
      format: 'der',
      type: 'spki',
    });
    return verify(null, Buffer.from(signedKey, 'base64'), key, Buffer.from(signature, 'base64'));
  } catch {
    return false;
  }
}
