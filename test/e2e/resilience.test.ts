import type { IsolatedPlatform, Platform } from '@chat/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ownPlatform } from './helpers.ts';

// A platform of its own, because this test kills one of its services.
let run: IsolatedPlatform;
let platform: Platform;

beforeAll(async () => {
  run = await ownPlatform('res', 'resilience');
  platform = run.platform;
});

afterAll(async () => {
  await run?.stop();
});

async function health() {
  const res = await fetch(`${platform.urls.gateway}/v1/health`);
  return { status: res.status, body: (await res.json()) as { status: string; services: Record<string, { status: string }> } };
}

async function register(): Promise<string> {
  const name = `res_${crypto.randomUUID().slice(0, 8)}`;
  const res = await fetch(`${platform.urls.gateway}/v1/auth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-forwarded-for': '10.200.0.1' },
    body: JSON.stringify({ username: name, email: `${name}@example.test`, password: 'resilience-pass' }),
  });
  expect(res.status).toBe(201);
  return ((await res.json()) as { token: string }).token;
}

describe('a service that goes down', () => {
  it('is reported by /v1/health and its routes answer 503 within a second, then recover', async () => {
    expect((await health()).status).toBe(200);
    const token = await register();

    await platform.stopService('music', 'SIGKILL');
    const started = Date.now();
    const down = await health();
    const route = await fetch(`${platform.urls.gateway}/v1/music/${crypto.randomUUID()}`, {
      headers: { authorization: `Bearer ${token}` },
    });
    const elapsed = Date.now() - started;

    expect(down.status).toBe(503);
    expect(down.body.status).toBe('degraded');
    expect(down.body.services.music?.status).toBe('unavailable');
    expect(down.body.services.guilds?.status).toBe('ready');
    expect(route.status).toBe(503);
    expect(await route.json()).toEqual({ error: expect.stringContaining('music') });
    expect(elapsed).toBeLessThan(1_000);

    await platform.startService('music');
    expect((await health()).status).toBe(200);
  });
});
