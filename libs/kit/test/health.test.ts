import type { AddressInfo } from 'node:net';
import { testNamespace } from '@chat/testkit';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { connectBus } from '../src/bus.ts';
import { createPool } from '../src/db.ts';
import { optionalCheck, registerHealth } from '../src/health.ts';
import { createHttpApp } from '../src/http.ts';
import { natsCheck } from '../src/service.ts';
import { captureLogs } from './logs.ts';

const backing = inject('backing');
const { log } = captureLogs('silent');
const bus = await connectBus({ url: backing.natsUrl, namespace: testNamespace('kithealth'), name: 'kit-health-test', log });
const pool = createPool(backing.postgresUrl, 1);
const lostPool = createPool('postgres://postgres@127.0.0.1:1/gone', 1);
afterAll(async () => {
  await bus.close();
  await pool.end();
  await lostPool.end();
});

function appWith(checks: Parameters<typeof registerHealth>[1]) {
  const app = createHttpApp({ log });
  registerHealth(app, checks);
  return app;
}

describe('health endpoints', () => {
  it('answers ready when every backing part answers', async () => {
    const app = appWith({ postgres: () => pool.query('SELECT 1'), nats: () => natsCheck(bus) });
    const res = await app.inject({ method: 'GET', url: '/health/ready' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ status: 'ready', checks: { postgres: 'ok', nats: 'ok' } });
    await app.close();
  });

  it('answers 503 naming the failing check, while liveness stays 200', async () => {
    const app = appWith({ postgres: () => lostPool.query('SELECT 1'), nats: () => natsCheck(bus) });
    const res = await app.inject({ method: 'GET', url: '/health/ready' });
    expect(res.statusCode).toBe(503);
    const body = res.json();
    expect(body.status).toBe('unavailable');
    expect(body.checks.nats).toBe('ok');
    expect(body.checks.postgres).toMatch(/^unavailable: /);
    expect((await app.inject({ method: 'GET', url: '/health/live' })).statusCode).toBe(200);
    await app.close();
  });

  it('answers 503 within about a second when a check hangs', async () => {
    const app = appWith({ stuck: () => new Promise(() => {}) });
    const started = Date.now();
    const res = await app.inject({ method: 'GET', url: '/health/ready' });
    expect(res.statusCode).toBe(503);
    expect(res.json().checks.stuck).toBe('unavailable: timed out after 1000 ms');
    expect(Date.now() - started).toBeLessThan(2_000);
    await app.close();
  });

  it('reports a closed NATS connection', async () => {
    const closed = await connectBus({ url: backing.natsUrl, namespace: 'x', name: 'closed', log });
    await closed.close();
    const app = appWith({ nats: () => natsCheck(closed) });
    const res = await app.inject({ method: 'GET', url: '/health/ready' });
    expect(res.json()).toEqual({ status: 'unavailable', checks: { nats: 'unavailable: not connected' } });
    await app.close();
  });

  it('stays ready (200, degraded) when only an optional part such as the bus fails', async () => {
    const closed = await connectBus({ url: backing.natsUrl, namespace: 'x', name: 'closed', log });
    await closed.close();
    const app = appWith({ postgres: () => pool.query('SELECT 1'), nats: optionalCheck(() => natsCheck(closed)) });
    const res = await app.inject({ method: 'GET', url: '/health/ready' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ status: 'degraded', checks: { postgres: 'ok', nats: 'unavailable: not connected' } });
    await app.close();
  });

  it('is unavailable (503) when a required part fails, whatever the optional ones say', async () => {
    const app = appWith({ postgres: () => lostPool.query('SELECT 1'), nats: optionalCheck(() => natsCheck(bus)) });
    const res = await app.inject({ method: 'GET', url: '/health/ready' });
    expect(res.statusCode).toBe(503);
    expect(res.json().status).toBe('unavailable');
    await app.close();
  });
});

describe('closing the app', () => {
  it('finishes the request in flight, stops accepting, and does not wait for idle keep-alive sockets', async () => {
    const app = appWith({});
    let release: () => void = () => {};
    let started: () => void = () => {};
    const inFlight = new Promise<void>((resolve) => {
      started = resolve;
    });
    app.get('/slow', async () => {
      started();
      await new Promise<void>((resolve) => {
        release = resolve;
      });
      return { done: true };
    });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;

    const slow = fetch(`${base}/slow`);
    await inFlight;
    const closing = app.close();
    // Closing waits for the request in flight while refusing new connections.
    await expect(fetch(`${base}/health/live`, { signal: AbortSignal.timeout(1_000) })).rejects.toThrow();
    release();
    const res = await slow;
    expect(res.status).toBe(200);
    expect(res.headers.get('connection')).toBe('close');
    expect(await res.json()).toEqual({ done: true });
    // The client's keep-alive socket must not hold close() open.
    await closing;
  }, 10_000);
});
