import { createHmac } from 'node:crypto';
import Fastify from 'fastify';
import { base64url, exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { createTestIssuer, startEchoUpstream, startGateway } from './helpers.ts';

const upstream = await startEchoUpstream();
const issuer = await createTestIssuer();
const gateway = await startGateway({ upstreamUrl: upstream.url, keys: issuer.keys });
afterAll(async () => {
  await gateway.close();
  await upstream.close();
});

const me = (authorization?: string) =>
  gateway.app.inject({ method: 'GET', url: '/v1/users/@me', headers: authorization ? { authorization } : {} });
const user = crypto.randomUUID();
const encode = (value: object) => base64url.encode(JSON.stringify(value));
const claims = () => ({
  sub: user,
  sid: crypto.randomUUID(),
  iss: 'chat-auth',
  aud: 'chat-api',
  iat: Math.floor(Date.now() / 1000),
  exp: Math.floor(Date.now() / 1000) + 600,
});

describe('the token check at the edge', () => {
  it('lets a valid token through to the service, Authorization header intact', async () => {
    const token = await issuer.sign(user);
    const res = await me(`Bearer ${token}`);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ upstream: true, url: '/v1/users/@me', authorization: `Bearer ${token}` });
  });

  it('lets public routes through without a token', async () => {
    const res = await gateway.app.inject({ method: 'POST', url: '/v1/auth/refresh', payload: { refreshToken: 'x' } });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ upstream: true });
  });

  it('accepts a token expired 10 s ago (30 s of clock skew) and refuses one expired a minute ago', async () => {
    expect((await me(`Bearer ${await issuer.sign(user, { expiresIn: '-10s' })}`)).statusCode).toBe(200);
    const expired = await me(`Bearer ${await issuer.sign(user, { expiresIn: '-60s' })}`);
    expect(expired.statusCode).toBe(401);
    expect(expired.json()).toEqual({ error: 'Access token expired' });
  });

  it.each([
    ['missing', async () => undefined],
    ['not a bearer', async () => `Basic ${Buffer.from('a:b').toString('base64')}`],
    ['malformed', async () => 'Bearer not.a.jwt'],
    ['a refresh token', async () => `Bearer ${base64url.encode(crypto.getRandomValues(new Uint8Array(32)))}`],
    ['signed by another key', async () => `Bearer ${await (await createTestIssuer()).sign(user)}`],
    ['of another issuer', async () => `Bearer ${await issuer.sign(user, { issuer: 'someone-else' })}`],
    ['for another audience', async () => `Bearer ${await issuer.sign(user, { audience: 'other-api' })}`],
    // RFC 8725 explicit types: a JWT of another kind signed by a trusted key is not an access token.
    ['typed as a plain JWT, not an access token', async () => `Bearer ${await issuer.sign(user, { typ: 'JWT' })}`],
    ['without a typ', async () => `Bearer ${await issuer.sign(user, { typ: null })}`],
    ['alg none', async () => `Bearer ${encode({ alg: 'none', typ: 'JWT', kid: 'test-key' })}.${encode(claims())}.`],
  ])('answers 401 {"error"} for a token that is %s, and the service never sees it', async (_kind, header) => {
    const res = await me(await header());
    expect(res.statusCode).toBe(401);
    expect(res.json()).toEqual({ error: expect.any(String) });
    expect(res.json()).not.toHaveProperty('upstream');
  });

  it('answers 401 for HS256 signed with the public key as the secret', async () => {
    const { publicKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519', extractable: true });
    const jwk = { ...(await exportJWK(publicKey)), kid: 'hs-key' } as JWK;
    const keys = async () => publicKey;
    const gw = await startGateway({ upstreamUrl: upstream.url, keys });
    const header = encode({ alg: 'HS256', typ: 'JWT', kid: 'hs-key' });
    const body = encode(claims());
    const signature = createHmac('sha256', JSON.stringify(jwk)).update(`${header}.${body}`).digest('base64url');
    const signature2 = createHmac('sha256', base64url.decode(jwk.x as string))
      .update(`${header}.${body}`)
      .digest('base64url');
    for (const sig of [signature, signature2]) {
      const res = await gw.app.inject({
        method: 'GET',
        url: '/v1/users/@me',
        headers: { authorization: `Bearer ${header}.${body}.${sig}` },
      });
      expect(res.statusCode).toBe(401);
    }
    await gw.close();
  });
});

describe('key rotation, with the JWKS fetched over HTTP', () => {
  afterEach(() => vi.useRealTimers());

  it('keeps old tokens valid, refetches on an unknown kid at most once per 30 s', async () => {
    const keyA = await signingKey('key-a');
    const keyB = await signingKey('key-b');
    let published: JWK[] = [keyA.jwk];
    let fetches = 0;
    const jwksServer = Fastify();
    jwksServer.get('/jwks', async () => {
      fetches += 1;
      return { keys: published };
    });
    const jwksUrl = `${await jwksServer.listen({ port: 0, host: '127.0.0.1' })}/jwks`;
    const gw = await startGateway({ upstreamUrl: upstream.url, keys: jwksUrl });
    const call = async (token: string) =>
      (await gw.app.inject({ method: 'GET', url: '/v1/users/@me', headers: { authorization: `Bearer ${token}` } })).statusCode;
    try {
      const tokenA = await keyA.sign();
      expect(await call(tokenA)).toBe(200);
      published = [keyB.jwk, keyA.jwk];
      const tokenB = await keyB.sign();
      // Within 30 s of the last fetch an unknown kid does not trigger another fetch.
      expect(await call(tokenB)).toBe(401);
      expect(fetches).toBe(1);
      vi.useFakeTimers({ toFake: ['Date'] });
      vi.setSystemTime(Date.now() + 31_000);
      expect(await call(tokenB)).toBe(200);
      expect(fetches).toBe(2);
      // The old key stays published until its tokens have expired: nobody is logged out.
      expect(await call(await keyA.sign())).toBe(200);
    } finally {
      await gw.close();
      await jwksServer.close();
    }
  });
});

async function signingKey(kid: string) {
  const { publicKey, privateKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519', extractable: true });
  const jwk = { ...(await exportJWK(publicKey)), kid, alg: 'EdDSA', use: 'sig' } as JWK;
  return {
    jwk,
    sign: () =>
      new SignJWT({ sid: crypto.randomUUID() })
        .setProtectedHeader({ alg: 'EdDSA', kid, typ: 'at+jwt' })
        .setSubject(user)
        .setIssuer('chat-auth')
        .setAudience('chat-api')
        .setIssuedAt()
        .setExpirationTime('15m')
        .sign(privateKey),
  };
}
