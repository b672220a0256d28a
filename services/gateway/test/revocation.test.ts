import { AUTH_SUBJECTS, STREAMS } from '@chat/contracts';
import { connectBus, createLogger, ensureStream } from '@chat/kit';
import { deleteNamespaceStreams } from '@chat/testkit';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { rateKeyPrefix } from '../src/domain/rate-limit.ts';
import { createTestIssuer, freePort, newNamespace, startEchoUpstream, startGateway, type TestGateway } from './helpers.ts';

const upstream = await startEchoUpstream();
const issuer = await createTestIssuer();
const namespace = newNamespace();
const bus = await connectBus({
  url: inject('backing').natsUrl,
  namespace,
  name: 'gateway-revocation-test',
  log: createLogger({ service: 'test', level: 'silent' }),
});
await ensureStream(bus, STREAMS.auth);
const env = { TRUSTED_PROXIES: '127.0.0.1', REDIS_TIMEOUT_MS: '3000' };
const gateway = await startGateway({ upstreamUrl: upstream.url, keys: issuer.keys, namespace, bus, env });
afterAll(async () => {
  await gateway.close();
  await upstream.close();
  await deleteNamespaceStreams(bus, namespace);
  await bus.nc.drain();
});

/** What auth's outbox relay publishes when it revokes a session. */
async function publishRevocation(sessionId: string, userId: string): Promise<void> {
  const envelope = {
    id: crypto.randomUUID(),
    subject: AUTH_SUBJECTS.sessionRevoked,
    occurredAt: new Date().toISOString(),
    data: { sessionId, userId },
  };
  await bus.js.publish(bus.subject(AUTH_SUBJECTS.sessionRevoked), JSON.stringify(envelope), { msgID: envelope.id });
}

const me = (gw: TestGateway, token: string) =>
  gw.app.inject({ method: 'GET', url: '/v1/users/@me', headers: { authorization: `Bearer ${token}`, 'x-forwarded-for': '198.21.0.1' } });

/** The first answer that is not a 200, asking again until `withinMs` has passed since `since`. */
async function refusedWithin(gw: TestGateway, token: string, since: number, withinMs: number) {
  for (;;) {
    const res = await me(gw, token);
    if (res.statusCode !== 200 || Date.now() - since > withinMs) return { res, afterMs: Date.now() - since };
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('a revoked session', () => {
  it('is refused at the gateway within a second of auth.session.revoked, and lands on the Redis denylist', async () => {
    const userId = crypto.randomUUID();
    const sessionId = crypto.randomUUID();
    const token = await issuer.sign(userId, { sessionId });
    const other = await issuer.sign(userId);
    expect((await me(gateway, token)).statusCode).toBe(200);
    const published = Date.now();
    await publishRevocation(sessionId, userId);
    const { res, afterMs } = await refusedWithin(gateway, token, published, 1_000);
    expect(res.statusCode).toBe(401);
    expect(res.json()).toEqual({ error: 'Session revoked' });
    expect(afterMs).toBeLessThanOrEqual(1_000);
    // Another session of the same user is untouched.
    expect((await me(gateway, other)).statusCode).toBe(200);
    // The denylist entry lives as long as the longest access token (15 min + 30 s tolerance).
    const ttl = await gateway.redis.pttl(`${rateKeyPrefix(namespace)}revoked:${sessionId}`);
    expect(ttl).toBeGreaterThan(900_000);
    expect(ttl).toBeLessThanOrEqual(930_000);
  });

  it('is refused by a replica that never saw the event, from the Redis denylist checked with the rate tier', async () => {
    const replica = await startGateway({ upstreamUrl: upstream.url, keys: issuer.keys, namespace, env });
    try {
      const sessionId = crypto.randomUUID();
      const token = await issuer.sign(crypto.randomUUID(), { sessionId });
      expect((await me(replica, token)).statusCode).toBe(200);
      await replica.redis.set(`${rateKeyPrefix(namespace)}revoked:${sessionId}`, '1', 'PX', 60_000);
      const res = await me(replica, token);
      expect(res.statusCode).toBe(401);
      expect(res.json()).toEqual({ error: 'Session revoked' });
    } finally {
      await replica.close();
    }
  });

  it('is refused while Redis is down, from the revocations this process keeps in memory', async () => {
    const down = await startGateway({
      upstreamUrl: upstream.url,
      keys: issuer.keys,
      namespace,
      bus,
      redisUrl: `redis://127.0.0.1:${await freePort()}`,
      env: { TRUSTED_PROXIES: '127.0.0.1' },
    });
    try {
      const userId = crypto.randomUUID();
      const sessionId = crypto.randomUUID();
      const token = await issuer.sign(userId, { sessionId });
      expect((await me(down, token)).statusCode).toBe(200);
      const published = Date.now();
      await publishRevocation(sessionId, userId);
      const { res, afterMs } = await refusedWithin(down, token, published, 1_000);
      expect(res.statusCode).toBe(401);
      expect(res.json()).toEqual({ error: 'Session revoked' });
      expect(afterMs).toBeLessThanOrEqual(1_000);
    } finally {
      await down.close();
    }
  });

  it('is known to a gateway that starts after the revocation (replayed from the stream)', async () => {
    const userId = crypto.randomUUID();
    const sessionId = crypto.randomUUID();
    await publishRevocation(sessionId, userId);
    const later = await startGateway({ upstreamUrl: upstream.url, keys: issuer.keys, namespace: newNamespace(), bus, env });
    try {
      const token = await issuer.sign(userId, { sessionId });
      const { res } = await refusedWithin(later, token, Date.now(), 1_000);
      expect(res.statusCode).toBe(401);
    } finally {
      await later.close();
    }
  });
});
