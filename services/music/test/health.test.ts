import { STREAMS } from '@chat/contracts';
import { loadConfig } from '@chat/kit';
import { createTestIssuer, createTestRuntime } from '@chat/testkit';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { buildApp } from '../src/app.ts';
import { MusicConfig } from '../src/config.ts';

const runtime = await createTestRuntime({
  service: 'music',
  migrationsDir: new URL('../migrations', import.meta.url).pathname,
  stream: STREAMS.music,
  backing: inject('backing'),
});
const issuer = await createTestIssuer();
const config = loadConfig(MusicConfig, runtime.env);
const tokens = issuer.verifier();
const app = await buildApp({ ...runtime, config, tokens });
afterAll(async () => {
  await app.close();
  await runtime.close();
});

describe('music service health', () => {
  it('is ready when PostgreSQL and NATS answer', async () => {
    const res = await app.inject({ method: 'GET', url: '/health/ready' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ status: 'ready', checks: { postgres: 'ok', nats: 'ok' } });
  });
});
