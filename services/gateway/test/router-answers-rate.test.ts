import { afterAll, describe, expect, it } from 'vitest';
import { createTestIssuer, startEchoUpstream, startGateway } from './helpers.ts';

// The router answers a URL that does not decode before any hook runs: these tests check that the
// answer is still counted in the client's General window, as rate-limit.test.ts checks the others.
const upstream = await startEchoUpstream();
const issuer = await createTestIssuer();
// The exactness tests count answers, not timing: a generous Redis timeout keeps a loaded machine off the fallback.
const gateway = await startGateway({
  upstreamUrl: upstream.url,
  keys: issuer.keys,
  env: { TRUSTED_PROXIES: '127.0.0.1', REDIS_TIMEOUT_MS: '3000' },
});
afterAll(async () => {
  await gateway.close();
  await upstream.close();
});

const MALFORMED = '/v1/users/%E0%A4%A';
let ipCounter = 0;
/** A client IP no other test uses (another range than rate-limit.test.ts's). */
const freshIp = () => {
  ipCounter += 1;
  return `198.19.${Math.floor(ipCounter / 250)}.${(ipCounter % 250) + 1}`;
};
const get = (ip: string, url: string) => gateway.app.inject({ method: 'GET', url, headers: { 'x-forwarded-for': ip } });

describe('a URL that does not decode', () => {
  it('is counted in the General window of its client and carries X-RateLimit-*', async () => {
    const ip = freshIp();
    const answers = [await get(ip, MALFORMED), await get(ip, MALFORMED), await get(ip, '/v1/nothing-here')];
    expect(answers.map((a) => [a.statusCode, a.headers['x-ratelimit-limit'], a.headers['x-ratelimit-remaining']])).toEqual([
      [400, '300', '299'],
      [400, '300', '298'],
      [404, '300', '297'],
    ]);
    expect(answers[0]!.json()).toEqual({ error: 'Malformed URL' });
    expect(Number(answers[0]!.headers['x-ratelimit-reset'])).toBeGreaterThan(Date.now() / 1000);
  });

  it('carries the CORS headers of an ordinary answer when no origin is allowed: Vary only', async () => {
    const headers = { 'x-forwarded-for': freshIp(), origin: 'https://app.example' };
    const [malformed, ordinary] = [
      await gateway.app.inject({ method: 'GET', url: MALFORMED, headers }),
      await gateway.app.inject({ method: 'GET', url: '/v1/nothing-here', headers }),
    ];
    const corsOf = (res: typeof malformed) =>
      Object.fromEntries(Object.entries(res.headers).filter(([name]) => name.startsWith('access-control-') || name === 'vary'));
    expect(corsOf(malformed)).toEqual(corsOf(ordinary));
    expect(corsOf(malformed)).toEqual({ vary: 'Origin' });
  });

  it('fills the window like any request, and is refused 429 with Retry-After once it is full', async () => {
    const ip = freshIp();
    for (let i = 0; i < 300; i++) expect((await get(ip, MALFORMED)).statusCode).toBe(400);
    expect((await get(ip, '/v1/nothing-here')).statusCode).toBe(429);
    const limited = await gateway.app.inject({
      method: 'GET',
      url: MALFORMED,
      headers: { 'x-forwarded-for': ip, 'x-request-id': 'client-req-429' },
    });
    expect(limited.statusCode).toBe(429);
    expect(limited.json()).toEqual({ error: expect.stringMatching(/^Too many requests, /) });
    const retryAfter = Number(limited.headers['retry-after']);
    expect(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60).toBe(true);
    expect({
      limit: limited.headers['x-ratelimit-limit'],
      remaining: limited.headers['x-ratelimit-remaining'],
      id: limited.headers['x-request-id'],
      nosniff: limited.headers['x-content-type-options'],
    }).toEqual({ limit: '300', remaining: '0', id: 'client-req-429', nosniff: 'nosniff' });
    // Another client's window is its own.
    expect((await get(freshIp(), MALFORMED)).statusCode).toBe(400);
  });
});
