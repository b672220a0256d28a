import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { createTestIssuer, freePort, startGateway, startOwnRedis, type TestGateway } from './helpers.ts';

// Each service's /health/ready is played by a small server answering as the kit's probe does,
// including the operator's details (addresses) that must never reach a client.
function readinessServer(status: number, body: unknown): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    if (req.url !== '/health/ready') return void res.writeHead(404).end();
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server })),
  );
}

const ready = await readinessServer(200, { status: 'ready', checks: { postgres: 'ok', nats: 'ok' } });
const busless = await readinessServer(200, {
  status: 'degraded',
  checks: { postgres: 'ok', nats: 'unavailable: connect ECONNREFUSED 10.9.8.7:4222' },
});
const dbless = await readinessServer(503, {
  status: 'unavailable',
  checks: { postgres: 'unavailable: connect ECONNREFUSED 10.9.8.6:5432' },
});
const issuer = await createTestIssuer();
const gateways: TestGateway[] = [];
afterAll(async () => {
  for (const gw of gateways) await gw.close();
  for (const { server } of [ready, busless, dbless]) server.close();
});

async function gatewayWith(urls: Record<string, string>, redisUrl?: string) {
  const gw = await startGateway({ upstreamUrl: ready.url, keys: issuer.keys, env: urls, redisUrl });
  gateways.push(gw);
  return gw;
}

describe('/v1/health', () => {
  it('is 200 "ok" with every process ready', async () => {
    const gw = await gatewayWith({});
    const res = await gw.app.inject({ method: 'GET', url: '/v1/health' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      status: 'ok',
      services: Object.fromEntries(['gateway', 'auth', 'guilds', 'social', 'media', 'music'].map((s) => [s, { status: 'ready' }])),
    });
  });

  it('is 200 "degraded" when processes serve without the bus or Redis, with no error text', async () => {
    const redis = await startOwnRedis();
    await redis.stop();
    const gw = await gatewayWith({ GUILDS_URL: busless.url, SOCIAL_URL: busless.url }, redis.url);
    const res = await gw.app.inject({ method: 'GET', url: '/v1/health' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      status: 'degraded',
      services: {
        gateway: { status: 'degraded' },
        auth: { status: 'ready' },
        guilds: { status: 'degraded' },
        social: { status: 'degraded' },
        media: { status: 'ready' },
        music: { status: 'ready' },
      },
    });
  });

  it('is 503 naming an unavailable service, without its reason or any address', async () => {
    const refused = `http://127.0.0.1:${await freePort()}`;
    const gw = await gatewayWith({ MEDIA_URL: dbless.url, MUSIC_URL: refused });
    const res = await gw.app.inject({ method: 'GET', url: '/v1/health' });
    expect(res.statusCode).toBe(503);
    expect(res.json()).toEqual({
      status: 'degraded',
      services: {
        gateway: { status: 'ready' },
        auth: { status: 'ready' },
        guilds: { status: 'ready' },
        social: { status: 'ready' },
        media: { status: 'unavailable' },
        music: { status: 'unavailable' },
      },
    });
    expect(res.payload).not.toMatch(/ECONNREFUSED|127\.0\.0\.1|10\.9\.8|unavailable:/);
  });
});

describe('the process probes on the public port', () => {
  it('answer /health/ready with the status only, without the reason Redis is away', async () => {
    const redis = await startOwnRedis();
    await redis.stop();
    const gw = await gatewayWith({}, redis.url);
    const res = await gw.app.inject({ method: 'GET', url: '/health/ready' });
    expect({ status: res.statusCode, body: res.json() }).toEqual({ status: 200, body: { status: 'degraded' } });
    expect((await gw.app.inject({ method: 'GET', url: '/health/live' })).statusCode).toBe(200);
  });
});
