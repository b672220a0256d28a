import { describe, expect, inject, it } from 'vitest';
import { api, newUser, randomIp } from './helpers.ts';

const { urls } = inject('platform');

describe('the edge in front of the real services', () => {
  it('limits login to 5 per minute per client IP with 429, Retry-After and X-RateLimit-*', async () => {
    const ip = randomIp();
    const answers = [];
    for (let i = 0; i < 6; i++)
      answers.push(await api('POST', '/v1/auth/login', { ip, body: { login: 'nobody_e2e', password: 'wrong password' } }));
    expect(answers.map((a) => a.status)).toEqual([401, 401, 401, 401, 401, 429]);
    expect(answers[5]!.body).toEqual({ error: expect.stringMatching(/^Too many requests, /) });
    expect(Number(answers[5]!.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(answers[5]!.headers.get('x-ratelimit-remaining')).toBe('0');
  });

  it('counts webhook executions per webhook id (30 per minute), whoever sends them', async () => {
    const hook = crypto.randomUUID();
    const answers = [];
    for (let i = 0; i < 31; i++) answers.push(await api('POST', `/v1/webhooks/${hook}/token`, { ip: randomIp(), body: { content: 'hi' } }));
    expect(answers.slice(0, 30).every((a) => a.status !== 429 && a.headers.get('x-ratelimit-limit') === '30')).toBe(true);
    expect(answers[30]!.status).toBe(429);
  });

  it('refuses a refresh token used as a bearer token', async () => {
    const user = await newUser('edge');
    const res = await api('GET', '/v1/users/@me', { user: { ...user, token: user.refreshToken } });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ error: expect.any(String) });
  });

  it('gets nowhere with a forged identity header sent straight to a service', async () => {
    const user = await newUser('edge');
    const forged: Record<string, string>[] = [
      { 'x-user-id': user.id },
      { 'x-user-id': user.id, authorization: 'Bearer forged.token.here' },
    ];
    for (const headers of forged) {
      const res = await fetch(`${urls.auth}/v1/users/@me`, { headers });
      expect(res.status).toBe(401);
    }
  });
});
