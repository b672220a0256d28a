import { Writable } from 'node:stream';
import { createLogger } from '@chat/kit';
import { startTcpProxy } from '@chat/testkit';
import { describe, expect, inject, it } from 'vitest';
import WebSocket from 'ws';
import { realtimeKeyPrefix } from '../src/realtime.ts';
import { openSocket, startSocketGateway } from './socket-harness.ts';

/** Opens the socket and answers the status of the upgrade's answer (101 when it opened) and its x-request-id. */
function upgrade(url: string, headers: Record<string, string> = {}): Promise<{ status: number; requestId?: string }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers: { 'x-forwarded-for': '10.7.7.7', ...headers } });
    ws.once('upgrade', (res) => {
      resolve({ status: 101, requestId: res.headers['x-request-id'] as string | undefined });
      ws.close();
    });
    ws.once('unexpected-response', (_req, res) => {
      resolve({ status: res.statusCode ?? 0, requestId: res.headers['x-request-id'] as string | undefined });
      res.resume();
    });
    ws.once('error', reject);
  });
}

describe('a gateway started while Redis is unreachable', () => {
  it('starts, refuses sockets 503 and reports them not ready, then accepts them once Redis answers', async () => {
    const redis = new URL(inject('backing').redisUrl);
    const proxy = await startTcpProxy({ host: redis.hostname, port: Number(redis.port) });
    proxy.cut();
    const gw = await startSocketGateway({ subscriberUrl: proxy.url('redis') });
    try {
      expect((await upgrade(gw.url)).status).toBe(503);
      const ready = await fetch(`${gw.baseUrl}/health/ready`);
      expect({ status: ready.status, body: await ready.json() }).toEqual({ status: 200, body: { status: 'degraded' } });
      proxy.restore();
      await expect.poll(async () => (await upgrade(gw.url)).status, { timeout: 10_000, interval: 200 }).toBe(101);
      const client = await openSocket(gw.baseUrl);
      await client.identify(await gw.issuer.sign(crypto.randomUUID()));
      client.close();
    } finally {
      await gw.close();
      await proxy.close();
    }
  }, 30_000);
});

describe('a gateway whose Redis subscription drops', () => {
  it('sends each session, once subscribed again, what was dispatched to it meanwhile, with no later dispatch to show the gap', async () => {
    const redis = new URL(inject('backing').redisUrl);
    const proxy = await startTcpProxy({ host: redis.hostname, port: Number(redis.port) });
    const gw = await startSocketGateway({ subscriberUrl: proxy.url('redis') });
    try {
      const client = await openSocket(gw.baseUrl);
      const { sessionId } = await client.identify(await gw.issuer.sign(crypto.randomUUID()));
      const node = (await gw.redis.hget(`${realtimeKeyPrefix(gw.config.BUS_NAMESPACE)}s:${sessionId}`, 'node')) as string;
      const subscribers = async () => ((await gw.redis.pubsub('NUMSUB', gw.store.channelOf(node))) as [string, number])[1];
      proxy.cut();
      await expect.poll(subscribers).toBe(0);
      // Published to the replica while it cannot hear it: only the buffer keeps it.
      expect(await gw.store.deliver('TYPING_START', '{"missed":true}', { sessionIds: [sessionId] })).toBe(1);
      proxy.restore();
      const missed = await client.next((f) => f.t === 'TYPING_START', 10_000);
      expect(missed).toMatchObject({ s: 2, d: { missed: true } });
      client.close();
    } finally {
      await gw.close();
      await proxy.close();
    }
  }, 30_000);
});

describe('a socket upgrade', () => {
  it('is logged under its request id (the client’s when well formed, else a new one), with its outcome', async () => {
    const lines: Record<string, unknown>[] = [];
    const destination = new Writable({
      write(chunk, _encoding, done) {
        for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line));
        done();
      },
    });
    const gw = await startSocketGateway({ log: createLogger({ service: 'gateway', level: 'info', destination }) });
    try {
      const requestId = `ws-${crypto.randomUUID()}`;
      const opened = await upgrade(gw.url, { 'x-request-id': requestId });
      const unnamed = await upgrade(gw.url, { 'x-request-id': 'bad id with spaces' });
      expect(opened).toEqual({ status: 101, requestId });
      expect(unnamed.requestId).toMatch(/^[0-9a-f-]{36}$/);
      const of = (id: string | undefined) => lines.filter((l) => l.reqId === id).map((l) => [l.msg, l.status]);
      expect(of(requestId)).toEqual([
        ['incoming socket upgrade', undefined],
        ['socket opened', 101],
      ]);
      expect(of(unnamed.requestId)).toEqual([
        ['incoming socket upgrade', undefined],
        ['socket opened', 101],
      ]);
    } finally {
      await gw.close();
    }
  });
});
