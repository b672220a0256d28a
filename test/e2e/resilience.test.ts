import { join } from 'node:path';
import { createTestDatabase, DEFAULT_PORTS, type Platform, SERVICES, startPlatform, type TestDatabase, testNamespace } from '@chat/testkit';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { E2E_ENV, freePort } from '../setup/platform.ts';

// A platform of its own, because this test kills one of its services.
let platform: Platform;
let databases: TestDatabase[];

beforeAll(async () => {
  const backing = inject('backing');
  databases = await Promise.all(SERVICES.map((s) => createTestDatabase(backing.postgresUrl, `res_${s}`)));
  const ports = Object.fromEntries(await Promise.all(Object.keys(DEFAULT_PORTS).map(async (n) => [n, await freePort()])));
  const namespace = testNamespace('res');
  platform = await startPlatform({
    backing,
    ports: ports as Platform['urls'] extends Record<infer K, string> ? Record<K, number> : never,
    databases: Object.fromEntries(SERVICES.map((s, i) => [s, databases[i]!.url])) as Record<(typeof SERVICES)[number], string>,
    namespace,
    logDir: join(inject('platform').logDir, 'resilience'),
    baseEnv: { PATH: process.env.PATH, HOME: process.env.HOME, NODE_ENV: 'test', LOG_LEVEL: 'warn' },
    extraEnv: E2E_ENV,
  });
});

afterAll(async () => {
  await platform?.stop();
  await Promise.all((databases ?? []).map((d) => d.drop().catch(() => {})));
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
