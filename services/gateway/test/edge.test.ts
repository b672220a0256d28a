import { afterAll, describe, expect, it } from 'vitest';
import { createTestIssuer, startEchoUpstream, startGateway } from './helpers.ts';

const upstream = await startEchoUpstream();
const issuer = await createTestIssuer();
const gateway = await startGateway({
  upstreamUrl: upstream.url,
  keys: issuer.keys,
  env: { CORS_ORIGINS: 'https://app.example', BODY_LIMIT_BYTES: '1024' },
});
afterAll(async () => {
  await gateway.close();
  await upstream.close();
});

describe('edge hygiene', () => {
  it('answers 413 for a body over the limit before it reaches a service', async () => {
    const res = await gateway.app.inject({
      method: 'POST',
      url: '/v1/auth/register',
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ username: 'x'.repeat(2_000) }),
    });
    expect(res.statusCode).toBe(413);
    expect(res.json()).toEqual({ error: 'Request body is too large' });
    const small = await gateway.app.inject({ method: 'POST', url: '/v1/auth/register', payload: { username: 'x' } });
    expect(small.json()).toMatchObject({ upstream: true });
  });

  it('puts security headers on its own and on proxied answers', async () => {
    for (const url of ['/v1/health', '/v1/auth/jwks']) {
      const res = await gateway.app.inject({ method: 'GET', url });
      expect(res.headers['x-content-type-options']).toBe('nosniff');
      expect(res.headers['strict-transport-security']).toMatch(/max-age=/);
      expect(res.headers['content-security-policy']).toContain("default-src 'none'");
      expect(res.headers['x-frame-options']).toBe('DENY');
    }
  });

  it('answers a CORS preflight for a configured origin only, allowing Idempotency-Key, exposing the rate and replay headers', async () => {
    const preflight = (origin: string) =>
      gateway.app.inject({
        method: 'OPTIONS',
        url: '/v1/servers',
        headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization,idempotency-key' },
      });
    const allowed = await preflight('https://app.example');
    expect(allowed.statusCode).toBe(204);
    expect(allowed.headers['access-control-allow-origin']).toBe('https://app.example');
    expect(String(allowed.headers['access-control-allow-headers']).split(/,\s*/)).toEqual(
      expect.arrayContaining(['authorization', 'content-type', 'idempotency-key']),
    );
    const simple = await gateway.app.inject({ method: 'GET', url: '/v1/health', headers: { origin: 'https://app.example' } });
    expect(String(simple.headers['access-control-expose-headers']).split(/,\s*/)).toEqual(
      expect.arrayContaining(['x-ratelimit-remaining', 'retry-after', 'idempotent-replayed']),
    );
    const other = await preflight('https://evil.example');
    expect(other.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('puts the security headers on a preflight, which cors answers before any other hook', async () => {
    const res = await gateway.app.inject({
      method: 'OPTIONS',
      url: '/v1/servers',
      headers: { origin: 'https://app.example', 'access-control-request-method': 'POST' },
    });
    expect({
      status: res.statusCode,
      acao: res.headers['access-control-allow-origin'],
      nosniff: res.headers['x-content-type-options'],
    }).toEqual({
      status: 204,
      acao: 'https://app.example',
      nosniff: 'nosniff',
    });
    expect(res.headers['content-security-policy']).toContain("default-src 'none'");
  });

  it('answers an OPTIONS that is not a preflight like any other method: a JSON 405 with Allow, with the security headers', async () => {
    const cases = {
      noOrigin: { 'access-control-request-method': 'GET' },
      noRequestMethod: { origin: 'https://app.example' },
      neither: {},
    };
    for (const [name, headers] of Object.entries(cases)) {
      const res = await gateway.app.inject({ method: 'OPTIONS', url: '/v1/health', headers });
      expect({
        name,
        status: res.statusCode,
        type: res.headers['content-type'],
        allow: res.headers.allow,
        body: res.json(),
        nosniff: res.headers['x-content-type-options'],
      }).toEqual({
        name,
        status: 405,
        type: expect.stringMatching(/^application\/json/),
        allow: 'GET',
        body: { error: 'Method OPTIONS not allowed on /v1/health' },
        nosniff: 'nosniff',
      });
    }
  });

  it('names in Allow only the methods the contracts give a path, for a method no route serves (PROPFIND, TRACE)', async () => {
    const token = await issuer.sign('0190a6d2-6f1e-7c3a-8b4e-2f5d6c7b8a90');
    for (const method of ['PROPFIND', 'TRACE']) {
      const res = await gateway.app.inject({
        method: method as 'GET',
        url: '/v1/users/@me',
        headers: { authorization: `Bearer ${token}` },
      });
      expect({
        method,
        status: res.statusCode,
        allow: res.headers.allow,
        body: res.json(),
        nosniff: res.headers['x-content-type-options'],
      }).toEqual({
        method,
        status: 405,
        allow: 'GET, PATCH',
        body: { error: `Method ${method} not allowed on /v1/users/@me` },
        nosniff: 'nosniff',
      });
    }
  });

  it('gives a URL that does not decode its request id and the security headers', async () => {
    const res = await gateway.app.inject({ method: 'GET', url: '/v1/servers/%E0%A4%A', headers: { 'x-request-id': 'client-req-9' } });
    expect({
      status: res.statusCode,
      body: res.json(),
      id: res.headers['x-request-id'],
      nosniff: res.headers['x-content-type-options'],
    }).toEqual({
      status: 400,
      body: { error: 'Malformed URL' },
      id: 'client-req-9',
      nosniff: 'nosniff',
    });
  });

  it('gives a URL that does not decode the CORS headers of an ordinary answer, so that a page can read why it failed', async () => {
    const corsOf = (res: { headers: Record<string, unknown> }) => ({
      origin: res.headers['access-control-allow-origin'],
      exposed: res.headers['access-control-expose-headers'],
      vary: res.headers.vary,
    });
    for (const origin of ['https://app.example', 'https://evil.example']) {
      const malformed = await gateway.app.inject({ method: 'GET', url: '/v1/servers/%E0%A4%A', headers: { origin } });
      const ordinary = await gateway.app.inject({ method: 'GET', url: '/v1/nothing-here', headers: { origin } });
      expect([malformed.statusCode, ordinary.statusCode]).toEqual([400, 404]);
      expect(corsOf(malformed)).toEqual(corsOf(ordinary));
    }
    const readable = await gateway.app.inject({ method: 'GET', url: '/v1/servers/%E0%A4%A', headers: { origin: 'https://app.example' } });
    expect(corsOf(readable)).toMatchObject({ origin: 'https://app.example', vary: 'Origin' });
    expect(String(readable.headers['access-control-expose-headers']).split(/,\s*/)).toEqual(
      expect.arrayContaining(['x-request-id', 'x-ratelimit-remaining', 'retry-after']),
    );
  });

  it('answers an unknown area 404 without asking for a token, and an unknown path of a service 401', async () => {
    const unknown = await gateway.app.inject({ method: 'GET', url: '/v1/nothing-here' });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.headers['x-ratelimit-limit']).toBe('300');
    const serviceArea = await gateway.app.inject({ method: 'GET', url: '/v1/servers/whatever' });
    expect(serviceArea.statusCode).toBe(401);
  });
});
