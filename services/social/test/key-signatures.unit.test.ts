import { Buffer } from 'node:buffer';
import { generateKeyPairSync, sign } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { verifiesSignedPreKey } from '../src/domain/key-signatures.ts';

const raw = (jwkX: string | undefined) => Buffer.from(jwkX as string, 'base64url').toString('base64');

describe('verifiesSignedPreKey', () => {
  const identity = generateKeyPairSync('ed25519');
  const identityKey = raw(identity.publicKey.export({ format: 'jwk' }).x);
  const prekey = Buffer.from(raw(generateKeyPairSync('x25519').publicKey.export({ format: 'jwk' }).x), 'base64');
  const signature = sign(null, prekey, identity.privateKey).toString('base64');

  it('accepts the identity key’s Ed25519 signature over the raw prekey', () => {
    expect(verifiesSignedPreKey(identityKey, prekey.toString('base64'), signature)).toBe(true);
  });

  it('refuses another key’s signature, another prekey, and a key that is not an Ed25519 point', () => {
    const other = generateKeyPairSync('ed25519');
    expect(verifiesSignedPreKey(raw(other.publicKey.export({ format: 'jwk' }).x), prekey.toString('base64'), signature)).toBe(false);
    expect(verifiesSignedPreKey(identityKey, Buffer.alloc(32, 7).toString('base64'), signature)).toBe(false);
    // 2^255 - 1 does not decode to a curve point.
    const notAPoint = Buffer.alloc(32, 0xff);
    notAPoint[31] = 0x7f;
    expect(verifiesSignedPreKey(notAPoint.toString('base64'), prekey.toString('base64'), signature)).toBe(false);
  });
});
