import { request } from 'node:http';
import { afterAll, describe, expect, it } from 'vitest';
import { createTestIssuer, startEchoUpstream, startGateway } from './helpers.ts';

const upstream = await startEchoUpstream();
const issuer = await createTestIssuer();
const gateway = await startGateway({
  upstreamUrl: upstream.url,
  keys: issuer.keys,
  env: { TRUSTED_PROXIES: '127.0.0.1', REDIS_TIMEOUT_MS: '3000' },
});
// Over a real socket: inject() (like fetch) resolves dot segments before the gateway sees the path.
const baseUrl = new URL(await gateway.app.listen({ port: 0, host: '127.0.0.1' }));
afterAll(async () => {
  await gateway.close();
  await upstream.close();
});

let ipCounter = 0;
const freshIp = () => `198.19.${Math.floor(++ipCounter / 250)}.${(ipCounter % 250) + 1}`;

describe('dot segments in the path', () => {
  it('are refused with 400 before reaching a service, raw or percent-encoded, so no spelling of an auth endpoint escapes its tier', async () => {
    const token = await issuer.sign(crypto.randomUUID());
    const spellings = [
      '/v1/auth/./login',
      '/v1/auth/%2e/login',
      '/v1/auth/%2E/register',
      '/v1/auth/login/.',
      '/v1/auth/login/%2e',
      '/v1/users/../auth/forgot-password',
      '/v1/users/%2e%2e/auth/reset-password',
      '/v1/users/.%2E/auth/verify-email',
      '/v1/auth/resend-code/..?x=1',
    ];
    for (const url of spellings) {
      const res = await rawRequest(
        'POST',
        url,
        { authorization: `Bearer ${token}`, 'x-forwarded-for': freshIp() },
        { login: 'a', password: 'b' },
      );
      expect({ url, status: res.status, body: res.body }).toEqual({
        url,
        status: 400,
        body: { error: 'The path may not contain "." or ".." segments' },
      });
    }
  });

  it('keeps dots inside a segment (file names, versions) as they are', async () => {
    const token = await issuer.sign(crypto.randomUUID());
    const res = await rawRequest('GET', '/v1/media/0190f3c1-7a6e-7c1e-9a8b-1234567890ab/photo.v2..png', {
      authorization: `Bearer ${token}`,
      'x-forwarded-for': freshIp(),
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ upstream: true, url: '/v1/media/0190f3c1-7a6e-7c1e-9a8b-1234567890ab/photo.v2..png' });
  });
});

describe('an unknown path under /v1/auth', () => {
  it('is counted in the Auth tier (5 per 60 s), shared with the login window', async () => {
    const ip = freshIp();
    const answers = [];
    for (const url of ['/v1/auth/login', '/v1/auth/login-v2', '/v1/auth/sso/start', '/v1/auth/register/extra', '/v1/auth/login'])
      answers.push(await gateway.app.inject({ method: 'POST', url, headers: { 'x-forwarded-for': ip }, payload: {} }));
    expect(answers.map((a) => a.headers['x-ratelimit-limit'])).toEqual(['5', '5', '5', '5', '5']);
    const sixth = await gateway.app.inject({ method: 'DELETE', url: '/v1/auth/login', headers: { 'x-forwarded-for': ip } });
    expect(sixth.statusCode).toBe(429);
    expect(sixth.json()).toEqual({ error: expect.stringMatching(/^Too many requests, /) });
  });
});

/** Sends the path exactly as written (node's http client does not resolve dot segments). */
function rawRequest(
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: unknown,
): Promise<{ status: number; body: unknown }> {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: baseUrl.hostname,
        port: baseUrl.port,
        method,
        path,
        headers: { ...headers, ...(payload ? { 'content-type': 'application/json' } : {}) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString()) }));
      },
    );
    req.setTimeout(10_000, () => req.destroy(new Error('timed out')));
    req.on('error', reject);
    req.end(payload);
  });
}
