import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { createRedis, redisReady } from '../src/db/redis.ts';
import { createRateLimiter, rateKeyPrefix } from '../src/domain/rate-limit.ts';
import { createTestIssuer, freePort, newNamespace, startEchoUpstream, startGateway, startOwnRedis, type TestGateway } from './helpers.ts';

const upstream = await startEchoUpstream();
const issuer = await createTestIssuer();
// The exactness tests count answers, not timing: a generous Redis timeout keeps a loaded CI machine
// from tipping them onto the per-process fallback (the 100 ms default is tested under 'Redis is down').
const EXACT_ENV = { TRUSTED_PROXIES: '127.0.0.1', REDIS_TIMEOUT_MS: '3000' };
const gateway = await startGateway({ upstreamUrl: upstream.url, keys: issuer.keys, env: EXACT_ENV });
afterAll(async () => {
  await gateway.close();
  await upstream.close();
});

let ipCounter = 0;
/** A client IP no other test uses. */
const freshIp = () => {
  ipCounter += 1;
  return `198.18.${Math.floor(ipCounter / 250)}.${(ipCounter % 250) + 1}`;
};
const login = (gw: TestGateway, ip: string, url = '/v1/auth/login') =>
  gw.app.inject({ method: 'POST', url, headers: { 'x-forwarded-for': ip }, payload: { login: 'a', password: 'b' } });
const statuses = (answers: { statusCode: number }[]) => answers.map((a) => a.statusCode);

/** Waits until Redis holds commands back: a PING on the probe's connection goes unanswered for 50 ms. */
async function untilBlocked(probe: ReturnType<typeof createRedis>): Promise<void> {
  const unanswered = () =>
    Promise.race([probe.ping().then(() => false), new Promise<boolean>((resolve) => setTimeout(() => resolve(true), 50))]);
  while (!(await unanswered())) {}
}

describe('the Auth tier: 5 per 60 s per client IP', () => {
  it('admits 5 and answers the 6th with 429, Retry-After and the error body; every answer has X-RateLimit-*', async () => {
    const ip = freshIp();
    const answers = [];
    for (let i = 0; i < 6; i++) answers.push(await login(gateway, ip));
    expect(statuses(answers)).toEqual([200, 200, 200, 200, 200, 429]);
    expect(answers.map((a) => a.headers['x-ratelimit-remaining'])).toEqual(['4', '3', '2', '1', '0', '0']);
    for (const a of answers) {
      expect(a.headers['x-ratelimit-limit']).toBe('5');
      expect(Number(a.headers['x-ratelimit-reset'])).toBeGreaterThan(Date.now() / 1000);
    }
    const limited = answers[5]!;
    expect(limited.json()).toEqual({ error: expect.stringMatching(/^Too many requests, /) });
    const retryAfter = Number(limited.headers['retry-after']);
    expect(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60).toBe(true);
  });

  it('is one window for all six endpoints, whatever the letter case, trailing slash or query string', async () => {
    const ip = freshIp();
    const urls = ['/v1/auth/register', '/v1/AUTH/Login/', '/v1/auth/verify-email?x=1', '/v1/auth/resend-code', '/v1/auth/forgot-password'];
    for (const url of urls) expect((await login(gateway, ip, url)).headers['x-ratelimit-limit']).toBe('5');
    expect((await login(gateway, ip, '/v1/auth/reset-password')).statusCode).toBe(429);
    expect((await login(gateway, freshIp())).statusCode).toBe(200);
  });

  it('is exact under concurrency and across two gateway replicas sharing Redis', async () => {
    const namespace = newNamespace();
    const [a, b] = await Promise.all(
      [0, 1].map(() => startGateway({ upstreamUrl: upstream.url, keys: issuer.keys, namespace, env: EXACT_ENV })),
    );
    try {
      const ip = freshIp();
      const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => login(i % 2 ? a! : b!, ip)));
      expect(statuses(answers).filter((s) => s === 200)).toHaveLength(5);
      expect(statuses(answers).filter((s) => s === 429)).toHaveLength(15);
    } finally {
      await Promise.all([a!.close(), b!.close()]);
    }
  });
});

describe('the General tier: 300 per 60 s per client IP', () => {
  it('admits 300 and refuses the 301st, counting public and authenticated routes alike', async () => {
    const ip = freshIp();
    const token = await issuer.sign(crypto.randomUUID());
    const call = (i: number) =>
      gateway.app.inject({
        method: 'GET',
        url: i % 2 ? '/v1/users/@me' : '/v1/health',
        headers: { 'x-forwarded-for': ip, authorization: `Bearer ${token}` },
      });
    const answers = [];
    for (let i = 0; i < 301; i++) answers.push(await call(i));
    expect(answers.slice(0, 300).every((a) => a.statusCode !== 429)).toBe(true);
    expect(answers[299]!.headers['x-ratelimit-remaining']).toBe('0');
    expect(answers[300]!.statusCode).toBe(429);
    expect(answers[300]!.headers['x-ratelimit-limit']).toBe('300');
    // Its own window: the Auth tier of the same IP is untouched.
    expect((await login(gateway, ip)).statusCode).toBe(200);
  });
});

describe('the Webhook tier: 30 per 60 s per webhook id', () => {
  it('counts per webhook whatever the client IP, and each webhook separately', async () => {
    const hook = crypto.randomUUID();
    const execute = (id: string) =>
      gateway.app.inject({
        method: 'POST',
        url: `/v1/webhooks/${id}/token`,
        headers: { 'x-forwarded-for': freshIp() },
        payload: { content: 'hi' },
      });
    const answers = [];
    for (let i = 0; i < 31; i++) answers.push(await execute(i % 2 ? hook.toUpperCase() : hook));
    expect(answers.slice(0, 30).every((a) => a.statusCode === 200 && a.headers['x-ratelimit-limit'] === '30')).toBe(true);
    expect(answers[30]!.statusCode).toBe(429);
    expect((await execute(crypto.randomUUID())).statusCode).toBe(200);
  });
});

describe('client IP', () => {
  it('believes X-Forwarded-For only from a trusted peer', async () => {
    const untrusting = await startGateway({ upstreamUrl: upstream.url, keys: issuer.keys });
    try {
      // Every request claims another IP, but the peer is not trusted: one window (the peer's).
      const answers = [];
      for (let i = 0; i < 6; i++) answers.push(await login(untrusting, freshIp()));
      expect(statuses(answers)).toEqual([200, 200, 200, 200, 200, 429]);
      // Behind the trusted peer, X-Real-IP counts when there is no X-Forwarded-For.
      const realIp = freshIp();
      const viaRealIp = (ip: string) =>
        gateway.app.inject({ method: 'POST', url: '/v1/auth/login', headers: { 'x-real-ip': ip }, payload: {} });
      for (let i = 0; i < 5; i++) await viaRealIp(realIp);
      expect((await viaRealIp(realIp)).statusCode).toBe(429);
      expect((await viaRealIp(freshIp())).statusCode).toBe(200);
    } finally {
      await untrusting.close();
    }
  });
});

describe('when this process stalls', () => {
  it('takes the answer Redis gave during a stall longer than the timeout, not the fallback', async () => {
    const redis = createRedis(inject('backing').redisUrl, 5_000);
    const lines: string[] = [];
    const log = pino({ level: 'warn' }, new Writable({ write: (chunk, _enc, done) => done(void lines.push(String(chunk))) }));
    const limiter = createRateLimiter({ redis, keyPrefix: rateKeyPrefix(newNamespace()), log, timeoutMs: 100 });
    try {
      expect(await redisReady(redis, 15_000)).toBe(true);
      const check = { tier: 'auth' as const, subject: freshIp() };
      for (let i = 0; i < 5; i++) expect((await limiter.hit(check)).allowed).toBe(true);
      const sixth = limiter.hit(check);
      // The check goes out in this turn; then the process does not run for three times the timeout.
      await new Promise((resolve) => setImmediate(resolve));
      const until = performance.now() + 300;
      while (performance.now() < until);
      expect(await sixth).toMatchObject({ allowed: false, limit: 5, remaining: 0 });
      expect(lines.filter((l) => l.includes('Redis unavailable'))).toEqual([]);
    } finally {
      redis.disconnect();
    }
  });
});

describe('when Redis is down', () => {
  it('falls back onto per-process windows per client IP at the same limits, Auth included, and warns once', async () => {
    const lines: string[] = [];
    const log = pino({ level: 'warn' }, new Writable({ write: (chunk, _enc, done) => done(void lines.push(String(chunk))) }));
    const deadRedis = `redis://127.0.0.1:${await freePort()}`;
    const gw = await startGateway({
      upstreamUrl: upstream.url,
      keys: issuer.keys,
      redisUrl: deadRedis,
      log,
      env: { TRUSTED_PROXIES: '127.0.0.1' },
    });
    try {
      const token = await issuer.sign(crypto.randomUUID());
      const general = await gw.app.inject({
        method: 'GET',
        url: '/v1/users/@me',
        headers: { authorization: `Bearer ${token}`, 'x-forwarded-for': freshIp() },
      });
      expect(general.statusCode).toBe(200);
      expect(general.headers['x-ratelimit-limit']).toBe('300');
      // Auth: five per client IP in this process, as strict as with Redis...
      const guesser = freshIp();
      const answers = [];
      for (let i = 0; i < 6; i++) answers.push(await login(gw, guesser));
      expect(statuses(answers)).toEqual([200, 200, 200, 200, 200, 429]);
      expect(answers[5]?.json()).toEqual({ error: expect.stringContaining('Too many requests') });
      // ...without locking every other client out of logging in.
      const others = [];
      for (let i = 0; i < 3; i++) others.push(await login(gw, freshIp()));
      expect(statuses(others)).toEqual([200, 200, 200]);
      expect(lines.filter((l) => l.includes('Redis unavailable'))).toHaveLength(1);
    } finally {
      await gw.close();
    }
  });

  it('falls back at once when Redis is stopped mid-run, and the Auth tier then counts per client in this process', async () => {
    const redis = await startOwnRedis();
    const gw = await startGateway({
      upstreamUrl: upstream.url,
      keys: issuer.keys,
      redisUrl: redis.url,
      env: { TRUSTED_PROXIES: '127.0.0.1' },
    });
    try {
      const ip = freshIp();
      for (let i = 0; i < 5; i++) expect((await login(gw, ip)).statusCode).toBe(200);
      expect((await login(gw, ip)).statusCode).toBe(429);
      await redis.stop();
      const general = await gw.app.inject({ method: 'GET', url: '/v1/health', headers: { 'x-forwarded-for': ip } });
      expect(general.headers['x-ratelimit-limit']).toBe('300');
      // The fallback window of this client is fresh: five more logins in this process, then 429.
      const other = freshIp();
      const answers = [];
      for (let i = 0; i < 6; i++) answers.push(await login(gw, ip));
      for (let i = 0; i < 2; i++) answers.push(await login(gw, other));
      expect(statuses(answers)).toEqual([200, 200, 200, 200, 200, 429, 200, 200]);
    } finally {
      await gw.close();
      await redis.stop();
    }
  });

  it('gives up on a Redis that hangs after 100 ms and answers from the fallback', async () => {
    const redis = await startOwnRedis();
    const gw = await startGateway({ upstreamUrl: upstream.url, keys: issuer.keys, redisUrl: redis.url });
    const [blocker, probe] = [createRedis(redis.url, 5_000), createRedis(redis.url, 5_000)];
    try {
      await Promise.all([redisReady(blocker), redisReady(probe)]);
      // DEBUG SLEEP blocks this Redis for 2 s: every command meanwhile waits.
      const sleeping = blocker.call('DEBUG', 'SLEEP', '2').catch(() => {});
      await untilBlocked(probe);
      const started = performance.now();
      const answer = await gw.app.inject({ method: 'GET', url: '/v1/health' });
      const elapsed = performance.now() - started;
      expect(answer.headers['x-ratelimit-limit']).toBe('300');
      expect(elapsed).toBeGreaterThanOrEqual(90);
      expect(elapsed).toBeLessThan(1_000);
      await sleeping;
    } finally {
      blocker.disconnect();
      probe.disconnect();
      await gw.close();
      await redis.stop();
    }
  });
});
