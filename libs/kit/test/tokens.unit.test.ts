import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createTestIssuer, TEST_AUDIENCE, TEST_ISSUER } from '@chat/testkit';
import { createLocalJWKSet, exportJWK, generateKeyPair, type JWTVerifyGetKey, SignJWT } from 'jose';
import { afterAll, describe, expect, it } from 'vitest';
import { AppError } from '../src/errors.ts';
import { ACCESS_TOKEN_TYPE, bearerToken, createTokenVerifier } from '../src/tokens.ts';

const issuer = await createTestIssuer();
const verifierOf = (keys: string | JWTVerifyGetKey = issuer.keys) =>
  createTokenVerifier({ keys, issuer: TEST_ISSUER, audience: TEST_AUDIENCE, algorithm: 'EdDSA' });

const b64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
const nowS = () => Math.floor(Date.now() / 1000);
const claims = () => ({ sub: 'user-1', sid: 'session-1', iss: TEST_ISSUER, aud: TEST_AUDIENCE, iat: nowS(), exp: nowS() + 600 });

/** An issuer whose private key the test holds, to sign what createTestIssuer never would. */
async function localIssuer() {
  const { publicKey, privateKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519', extractable: true });
  const publicJwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'EdDSA' };
  const sign = (payload: Record<string, unknown>, alg: 'EdDSA' | 'HS256', key: typeof privateKey | Uint8Array = privateKey) =>
    new SignJWT(payload)
      .setProtectedHeader({ alg, kid: 'k1', typ: ACCESS_TOKEN_TYPE })
      .setSubject('u')
      .setIssuer(TEST_ISSUER)
      .setAudience(TEST_AUDIENCE)
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(key);
  return { keys: createLocalJWKSet({ keys: [publicJwk] }), publicJwk, sign };
}

async function rejection(promise: Promise<unknown>): Promise<AppError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AppError);
  return err as AppError;
}

describe('createTokenVerifier', () => {
  it('accepts a good EdDSA token and answers its identity', async () => {
    const token = await issuer.sign('user-7', { sessionId: 'sess-7' });
    const identity = await verifierOf().verify(token);
    expect(identity).toEqual({ id: 'user-7', sessionId: 'sess-7', exp: expect.any(Number) });
    expect(identity.exp).toBeGreaterThan(nowS() + 800);
  });

  it('tolerates 30 s of clock skew but rejects a token expired beyond it', async () => {
    const verifier = verifierOf();
    await expect(verifier.verify(await issuer.sign('u', { expiresIn: '-10s' }))).resolves.toMatchObject({ id: 'u' });
    const err = await rejection(verifier.verify(await issuer.sign('u', { expiresIn: '-45s' })));
    expect(err.status).toBe(401);
    expect(err.message).toBe('Access token expired');
  });

  it.each([
    ['another issuer', { issuer: 'someone-else' }],
    ['another audience', { audience: 'other-api' }],
  ])('rejects a token of %s', async (_label, options) => {
    const err = await rejection(verifierOf().verify(await issuer.sign('u', options)));
    expect(err.status).toBe(401);
    expect(err.message).toBe('Invalid access token');
  });

  it('rejects alg none', async () => {
    const token = `${b64url({ alg: 'none', typ: 'JWT', kid: 'test-key' })}.${b64url(claims())}.`;
    expect((await rejection(verifierOf().verify(token))).status).toBe(401);
  });

  it('rejects an HS256 token signed with the public key bytes', async () => {
    const local = await localIssuer();
    await expect(verifierOf(local.keys).verify(await local.sign({ sid: 's' }, 'EdDSA'))).resolves.toMatchObject({ id: 'u' });
    const forged = await local.sign({ sid: 's' }, 'HS256', Buffer.from(JSON.stringify(local.publicJwk)));
    expect((await rejection(verifierOf(local.keys).verify(forged))).status).toBe(401);
  });

  it('rejects a token signed by another key, even under the same kid', async () => {
    const stranger = await createTestIssuer();
    expect((await rejection(verifierOf().verify(await stranger.sign('u')))).status).toBe(401);
  });

  it('rejects a token without a session id', async () => {
    const local = await localIssuer();
    expect((await rejection(verifierOf(local.keys).verify(await local.sign({}, 'EdDSA')))).status).toBe(401);
  });

  it('rejects garbage', async () => {
    expect((await rejection(verifierOf().verify('not-a-jwt'))).status).toBe(401);
  });

  it('remembers a verified token and answers the same identity without verifying again', async () => {
    let keyLookups = 0;
    const counting: JWTVerifyGetKey = (header, token) => {
      keyLookups++;
      return (issuer.keys as (h: typeof header, t: typeof token) => ReturnType<JWTVerifyGetKey>)(header, token);
    };
    const verifier = verifierOf(counting);
    const token = await issuer.sign('user-9');
    const first = await verifier.verify(token);
    const second = await verifier.verify(token);
    expect(second).toBe(first);
    expect(keyLookups).toBe(1);
    await verifier.verify(await issuer.sign('user-9'));
    expect(keyLookups).toBe(2);
  });

  it('knows the session of a token it verified, without decoding it, and nothing of a token it did not verify', async () => {
    const verifier = verifierOf();
    const token = await issuer.sign('user-10', { sessionId: 'session-10' });
    expect(verifier.sessionOf?.(token)).toBeUndefined();
    await verifier.verify(token);
    expect(verifier.sessionOf?.(token)).toBe('session-10');
    const forged = `${token.slice(0, token.lastIndexOf('.'))}.AAAA`;
    await expect(verifier.verify(forged)).rejects.toThrow();
    expect(verifier.sessionOf?.(forged)).toBeUndefined();
  });

  it('does not cache a rejected token', async () => {
    let keyLookups = 0;
    const stranger = await createTestIssuer();
    const verifier = verifierOf((header, token) => {
      keyLookups++;
      return (issuer.keys as (h: unknown, t: unknown) => ReturnType<JWTVerifyGetKey>)(header, token);
    });
    const token = await stranger.sign('u');
    await rejection(verifier.verify(token));
    await rejection(verifier.verify(token));
    expect(keyLookups).toBe(2);
  });
});

let jwksStatus = 200;
const remoteKeys = await generateKeyPair('EdDSA', { crv: 'Ed25519' });
const remoteJwks = { keys: [{ ...(await exportJWK(remoteKeys.publicKey)), kid: 'remote', alg: 'EdDSA', use: 'sig' }] };
const jwksServer: Server = createServer((_req, res) => {
  const body = jwksStatus === 200 ? remoteJwks : { error: 'down' };
  res.writeHead(jwksStatus, { 'content-type': 'application/json' }).end(JSON.stringify(body));
});
await new Promise<void>((resolve) => jwksServer.listen(0, '127.0.0.1', resolve));
const jwksUrl = `http://127.0.0.1:${(jwksServer.address() as AddressInfo).port}/v1/auth/jwks`;
afterAll(() => new Promise<void>((resolve) => jwksServer.close(() => resolve())));
const signRemote = () =>
  new SignJWT({ sid: 's' })
    .setProtectedHeader({ alg: 'EdDSA', kid: 'remote', typ: ACCESS_TOKEN_TYPE })
    .setSubject('u')
    .setIssuer(TEST_ISSUER)
    .setAudience(TEST_AUDIENCE)
    .setIssuedAt()
    .setExpirationTime('5m')
    .sign(remoteKeys.privateKey);

describe('createTokenVerifier with a JWKS URL', () => {
  it('verifies against the fetched key set', async () => {
    await expect(verifierOf(jwksUrl).verify(await signRemote())).resolves.toMatchObject({ id: 'u' });
  });

  it('answers 503, not 401, when the key set cannot be fetched', async () => {
    jwksStatus = 503;
    try {
      const err = await rejection(verifierOf(jwksUrl).verify(await signRemote()));
      expect(err.status).toBe(503);
    } finally {
      jwksStatus = 200;
    }
    const unreachable = await rejection(verifierOf('http://127.0.0.1:1/jwks').verify(await signRemote()));
    expect(unreachable.status).toBe(503);
  });
});

describe('bearerToken', () => {
  it('takes the token of a Bearer header and nothing else', () => {
    expect(bearerToken('Bearer abc.def-ghi_jkl')).toBe('abc.def-ghi_jkl');
    expect(bearerToken('bearer abc.def')).toBe('abc.def');
    expect(bearerToken('Basic dXNlcjpwdw==')).toBeUndefined();
    expect(bearerToken('Bearer ')).toBeUndefined();
    expect(bearerToken('Bearer a b')).toBeUndefined();
    expect(bearerToken(undefined)).toBeUndefined();
  });
});
