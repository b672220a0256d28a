import { afterAll, describe, expect, it } from 'vitest';
import { createTestIssuer, startEchoUpstream, startGateway, type TestGateway } from './helpers.ts';

const upstream = await startEchoUpstream();
const issuer = await createTestIssuer();
const env = { TRUSTED_PROXIES: '127.0.0.1', REDIS_TIMEOUT_MS: '3000' };
const overwriting = await startGateway({ upstreamUrl: upstream.url, keys: issuer.keys, env });
const appending = await startGateway({
  upstreamUrl: upstream.url,
  keys: issuer.keys,
  env: { ...env, FORWARDED_FOR_MODE: 'rightmost-untrusted' },
});
afterAll(async () => {
  await Promise.all([overwriting.close(), appending.close()]);
  await upstream.close();
});

const login = (gw: TestGateway, forwardedFor: string) =>
  gw.app.inject({ method: 'POST', url: '/v1/auth/login', headers: { 'x-forwarded-for': forwardedFor }, payload: {} });
const statuses = (answers: { statusCode: number }[]) => answers.map((a) => a.statusCode);
const random16 = () => Math.floor(Math.random() * 0xffff).toString(16);

describe('client IP through the gateway', () => {
  it('counts IPv6 clients per /64: six addresses of one /64 share one Auth window', async () => {
    const prefix = `2001:db8:${random16()}:${random16()}`;
    const answers = [];
    for (let i = 0; i < 6; i++) answers.push(await login(overwriting, `${prefix}:${random16()}::${i + 1}`));
    expect(statuses(answers)).toEqual([200, 200, 200, 200, 200, 429]);
    expect(answers[5]!.json()).toEqual({ error: expect.stringMatching(/^Too many requests, /) });
    // Another /64 has its own window.
    expect((await login(overwriting, `2001:db8:${random16()}:${random16()}::1`)).statusCode).toBe(200);
  });

  it('behind an appending proxy (rightmost-untrusted), a client cannot pick a new window by writing its own first entry', async () => {
    const client = `198.18.200.${Math.floor(Math.random() * 250) + 1}`;
    const answers = [];
    for (let i = 0; i < 6; i++) answers.push(await login(appending, `203.0.113.${i + 1}, ${client}`));
    expect(statuses(answers)).toEqual([200, 200, 200, 200, 200, 429]);
  });
});
