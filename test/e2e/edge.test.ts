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

  it('counts valid webhook executions per webhook (30 per minute), whoever sends them; wrong tokens never lock it out', async () => {
    const owner = await newUser('edgehook');
    const server = (await api('POST', '/v1/servers', { user: owner, body: { name: 'E2E webhook tier' } })).body;
    const channels = (await api('GET', `/v1/servers/${server.id}/channels`, { user: owner })).body as { id: string; channelType: string }[];
    const channelId = (channels.find((c) => c.channelType === 'text') as { id: string }).id;
    const created = await api('POST', `/v1/channels/${channelId}/webhooks`, { user: owner, body: { name: 'Tier bot' } });
    expect(created.status).toBe(201);
    const { id, token } = created.body as { id: string; token: string };
    // 35 wrong tokens from one client: refused by the service, counted in that client's General window only.
    const attacker = randomIp();
    for (let i = 0; i < 35; i++) {
      const wrong = await api('POST', `/v1/webhooks/${id}/${'x'.repeat(43)}`, { ip: attacker, body: { content: 'forged' } });
      expect(wrong.status).toBe(401);
    }
    const answers = [];
    for (let i = 0; i < 31; i++)
      answers.push(await api('POST', `/v1/webhooks/${id}/${token}`, { ip: randomIp(), body: { content: `run ${i}` } }));
    // As one string, so that a failure shows every status and the body of any that is not 204.
    const outcomes = answers.slice(0, 30).map((a) => (a.status === 204 ? '204' : `${a.status} ${JSON.stringify(a.body)}`));
    expect(outcomes.join(', ')).toBe(Array(30).fill('204').join(', '));
    expect(answers[29]!.headers.get('x-ratelimit-limit')).toBe('30');
    expect(answers[30]!.status).toBe(429);
    expect(answers[30]!.body).toEqual({ error: expect.stringMatching(/^Too many requests, /) });
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
