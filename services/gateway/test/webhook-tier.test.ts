import Fastify from 'fastify';
import { afterAll, describe, expect, it } from 'vitest';
import { rateKeyPrefix } from '../src/domain/rate-limit.ts';
import { createTestIssuer, newNamespace, startGateway } from './helpers.ts';

// Stands in for guilds' webhook execution: one webhook with one right token; anything else is refused
// as the service refuses it (404 for an unknown webhook or a wrong token, 400 for an id that is not a UUID).
const HOOK = crypto.randomUUID();
const upstream = Fastify();
upstream.post<{ Params: { id: string; token: string } }>('/v1/webhooks/:id/:token', async (req, reply) => {
  if (!/^[0-9a-f-]{36}$/i.test(req.params.id)) return reply.code(400).send({ error: 'Invalid webhook id' });
  if (req.params.id !== HOOK || req.params.token !== 'right') return reply.code(404).send({ error: 'Unknown webhook' });
  return reply.code(204).send();
});
const upstreamUrl = await upstream.listen({ port: 0, host: '127.0.0.1' });
const issuer = await createTestIssuer();
const namespace = newNamespace();
const gateway = await startGateway({
  upstreamUrl,
  keys: issuer.keys,
  namespace,
  env: { TRUSTED_PROXIES: '127.0.0.1', REDIS_TIMEOUT_MS: '3000' },
});
afterAll(async () => {
  await gateway.close();
  await upstream.close();
});

let ipCounter = 0;
const freshIp = () => `198.20.${Math.floor(++ipCounter / 250)}.${(ipCounter % 250) + 1}`;
const execute = (ip: string, id: string, token: string) =>
  gateway.app.inject({
    method: 'POST',
    url: `/v1/webhooks/${id}/${token}`,
    headers: { 'x-forwarded-for': ip },
    payload: { content: 'hi' },
  });

describe('the Webhook tier', () => {
  it('never makes a window for an id that is not a UUID: the client General window counts it', async () => {
    const ip = freshIp();
    const res = await execute(ip, 'not-a-uuid', 'x');
    expect(res.statusCode).toBe(400);
    expect(res.headers['x-ratelimit-limit']).toBe('300');
    expect(await gateway.redis.keys(`${rateKeyPrefix(namespace)}webhook:*`)).toEqual([]);
  });

  it('counts executions with made-up ids in the client General window: the 301st failure is refused', async () => {
    const ip = freshIp();
    const answers = [];
    for (let i = 0; i < 301; i++) answers.push(await execute(ip, crypto.randomUUID(), 'guess'));
    expect(answers.slice(0, 300).every((a) => a.statusCode === 404)).toBe(true);
    expect(answers[300]!.statusCode).toBe(429);
    expect(answers[300]!.headers['x-ratelimit-limit']).toBe('300');
    expect(answers[300]!.json()).toEqual({ error: expect.stringMatching(/^Too many requests, /) });
    // Failed executions leave nothing in the webhooks' own windows.
    const counts = await Promise.all(
      (await gateway.redis.keys(`${rateKeyPrefix(namespace)}webhook:*`)).map((key) => gateway.redis.zcard(key)),
    );
    expect(counts.filter((n) => n > 0)).toEqual([]);
  });

  it('does not let wrong tokens lock the real integration out; valid executions get 30 per minute', async () => {
    const attacker = freshIp();
    for (let i = 0; i < 40; i++) expect((await execute(attacker, HOOK, `wrong${i}`)).statusCode).toBe(404);
    const integration = freshIp();
    const answers = [];
    for (let i = 0; i < 31; i++) answers.push(await execute(integration, HOOK, 'right'));
    expect(answers.slice(0, 30).map((a) => a.statusCode)).toEqual(Array(30).fill(204));
    expect(answers[29]!.headers['x-ratelimit-remaining']).toBe('0');
    expect(answers[30]!.statusCode).toBe(429);
    expect(answers[30]!.headers['x-ratelimit-limit']).toBe('30');
    expect(await gateway.redis.zcard(`${rateKeyPrefix(namespace)}webhook:${HOOK}`)).toBe(30);
    // The attacker's 40 failures were charged to the attacker's General window.
    expect(await gateway.redis.zcard(`${rateKeyPrefix(namespace)}general:${attacker}`)).toBe(40);
  });
});
