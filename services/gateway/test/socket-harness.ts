import { randomInt } from 'node:crypto';
import type { Duplex } from 'node:stream';
import {
  AUTH_SUBJECTS,
  ChannelViewersRpc,
  ServerMembersRpc,
  STREAMS,
  UserComembersRpc,
  UserConversationsRpc,
  UserFriendsRpc,
  UserGetRpc,
  UserServersRpc,
} from '@chat/contracts';
import {
  connectBus,
  createLogger,
  createTokenVerifier,
  type EventEnvelope,
  ensureStream,
  loadConfig,
  type Revocation,
  type RevocationList,
  revocationRetentionMs,
  serveRpc,
  watchRevocations,
} from '@chat/kit';
import { createTestIssuer, deleteNamespaceStreams, TEST_AUDIENCE, TEST_ISSUER } from '@chat/testkit';
import { Redis as IORedis } from 'ioredis';
import { inject, vi } from 'vitest';
import WebSocket from 'ws';
import { buildApp } from '../src/app.ts';
import { GatewayConfig } from '../src/config.ts';
import { createRedis } from '../src/db/redis.ts';
import { createRateLimiter, rateKeyPrefix } from '../src/domain/rate-limit.ts';
import { createSessionStore } from '../src/domain/session-store.ts';
import { realtimeKeyPrefix, startRealtime } from '../src/realtime.ts';
import { newNamespace } from './helpers.ts';

/**
 * One gateway replica with its real-time socket on a real port, as main builds it: real Redis and
 * NATS under a namespace of its own; the services' RPCs answered by the test (who views which
 * channel, who is in which server) and tokens from a test issuer. The revocation list is the kit's
 * (`watched`, fed by auth.session.revoked on the stream) or one the test feeds as that consumer
 * would. `natsUrl` is where the gateway's own bus connects (a proxy the test may cut); the test's
 * services and publications use the shared NATS directly.
 */
export async function startSocketGateway(
  options: { env?: Record<string, string>; natsUrl?: string; revocations?: 'fed' | 'watched' } = {},
) {
  const namespace = newNamespace();
  const config = loadConfig(GatewayConfig, {
    NODE_ENV: 'test',
    LOG_LEVEL: 'silent',
    BUS_NAMESPACE: namespace,
    TRUSTED_PROXIES: '127.0.0.1',
    ...options.env,
  });
  const log = createLogger({ service: 'gateway', level: 'silent' });
  const bus = await connectBus({ url: inject('backing').natsUrl, namespace, name: 'gateway-socket-test', log });
  await ensureStream(bus, STREAMS.auth);
  const gatewayBus = options.natsUrl ? await connectBus({ url: options.natsUrl, namespace, name: 'gateway-under-test', log }) : bus;
  const redisUrl = inject('backing').redisUrl;
  const [redis, subscriber, rateRedis] = [
    createRedis(redisUrl, 5_000, true),
    createRedis(redisUrl, 5_000, true),
    createRedis(redisUrl, 3_000),
  ];
  const limiter = createRateLimiter({ redis: rateRedis, keyPrefix: rateKeyPrefix(namespace), log });
  const issuer = await createTestIssuer();
  const fed = fedRevocations();
  const revocations =
    options.revocations === 'watched' ? await watchRevocations({ bus: gatewayBus, log, retentionMs: revocationRetentionMs(config) }) : fed;
  const tokens = createTokenVerifier({ keys: issuer.keys, issuer: TEST_ISSUER, audience: TEST_AUDIENCE, algorithm: 'EdDSA', revocations });
  const audiences = serveServices(bus, log);
  await bus.nc.flush();
  const realtime = await startRealtime({ config, log, bus: gatewayBus, redis, subscriber, tokens, limiter, revocations });
  const app = await buildApp({ config, log, tokens, limiter, realtime, checks: {} });
  const serverSockets: Duplex[] = [];
  app.server.on('upgrade', (_req, socket) => serverSockets.push(socket));
  const base = await app.listen({ port: 0, host: '127.0.0.1' });
  // Another replica's view of the same sessions: what the dispatch reader delivers goes through one.
  const storeRedis = new IORedis(redisUrl);
  const prefix = realtimeKeyPrefix(namespace);
  const store = createSessionStore({ redis: storeRedis, prefix, resumeWindowMs: 120_000, livenessMs: 60_000, bufferSize: 100_000 });
  return {
    config,
    bus,
    gatewayBus,
    redis,
    limiter,
    store,
    issuer,
    /** Feeds a revocation to the list as its consumer does (live, or replayed after the bus was away); the `fed` list only. */
    deliverRevocation: fed.deliver,
    revocations,
    audiences,
    realtime,
    serverSockets,
    url: `${base.replace(/^http/, 'ws')}/v1/gateway/ws`,
    /** An event on its stream, as a service's outbox relay publishes it. */
    async publish(subject: string, data: unknown): Promise<void> {
      const event: EventEnvelope = { id: crypto.randomUUID(), subject, occurredAt: new Date().toISOString(), data };
      await bus.js.publish(bus.subject(subject), JSON.stringify(event), { msgID: event.id });
    },
    /** Resolves once this replica reads the streams (it starts after their last event). */
    async reading(stream: string): Promise<void> {
      const key = `${prefix}dispatch:pos:${bus.name(stream)}`;
      await vi.waitFor(
        async () => {
          if (!(await storeRedis.exists(key))) throw new Error(`not reading ${stream} yet`);
        },
        { timeout: 10_000, interval: 50 },
      );
    },
    /** What auth's outbox relay publishes when it revokes a session. */
    async publishRevocation(sessionId: string, userId: string): Promise<void> {
      await this.publish(AUTH_SUBJECTS.sessionRevoked, { sessionId, userId });
    },
    async close() {
      await app.close();
      await revocations.stop();
      if (gatewayBus !== bus) await gatewayBus.close();
      await deleteNamespaceStreams(bus, namespace);
      await bus.nc.drain();
      for (const r of [redis, subscriber, rateRedis, storeRedis]) r.disconnect();
    },
  };
}

export type SocketGateway = Awaited<ReturnType<typeof startSocketGateway>>;

/** A revocation list fed by the test: `deliver` is what its consumer does for each revocation, live or replayed. */
function fedRevocations(): RevocationList & { deliver(sessionId: string, userId: string): void } {
  const revoked = new Set<string>();
  const listeners: ((revocation: Revocation) => void)[] = [];
  return {
    isRevoked: (sessionId) => revoked.has(sessionId),
    onRevoked: (listener) => void listeners.push(listener),
    stop: async () => {},
    deliver(sessionId, userId) {
      revoked.add(sessionId);
      const revokedAtMs = Date.now();
      for (const listener of listeners) listener({ sessionId, userId, revokedAtMs, untilMs: revokedAtMs + 930_000 });
    },
  };
}

/** The services' answers to the gateway: a user record for READY, nobody else around unless the test says so. */
function serveServices(bus: Awaited<ReturnType<typeof connectBus>>, log: ReturnType<typeof createLogger>) {
  const viewers = new Map<string, { serverId: string; userIds: string[] }>();
  const members = new Map<string, string[]>();
  serveRpc(bus, log, UserGetRpc, async ({ userId }) => ({
    id: userId,
    username: `u${randomInt(1_000_000)}`,
    displayName: 'Test',
    avatarUrl: null,
    bio: '',
    status: 'online' as const,
    customStatus: '',
    badges: [],
    createdAt: new Date().toISOString(),
    email: 'test@example.test',
  }));
  serveRpc(bus, log, UserServersRpc, async () => ({ serverIds: [] }));
  serveRpc(bus, log, UserConversationsRpc, async () => ({ conversationIds: [] }));
  serveRpc(bus, log, UserFriendsRpc, async () => ({ userIds: [] }));
  serveRpc(bus, log, UserComembersRpc, async () => ({ userIds: [] }));
  serveRpc(bus, log, ChannelViewersRpc, async ({ channelId }) => {
    const channel = viewers.get(channelId);
    return { channelId, serverId: channel?.serverId ?? crypto.randomUUID(), userIds: channel?.userIds ?? [] };
  });
  serveRpc(bus, log, ServerMembersRpc, async ({ serverId }) => ({ userIds: members.get(serverId) ?? [] }));
  return { viewers, members };
}

/** A frame as the gateway sends it. */
export interface Frame {
  op: number;
  // biome-ignore lint/suspicious/noExplicitAny: tests read whatever the frame holds and assert on it
  d: any;
  s: number | null;
  t: string | null;
}

/** A client socket that records every frame and waits for frames or the close by predicate. */
export class TestSocket {
  readonly frames: Frame[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;
  /** The 101's headers. */
  headers: Record<string, string | string[] | undefined> = {};
  private waiters = new Set<() => void>();
  private closeInfo: { code: number; reason: string } | undefined;

  private constructor(readonly ws: WebSocket) {
    ws.on('upgrade', (res) => {
      this.headers = res.headers;
    });
    ws.on('message', (data) => {
      this.frames.push(JSON.parse(String(data)) as Frame);
      for (const w of this.waiters) w();
    });
    this.closed = new Promise((resolve) =>
      ws.on('close', (code, reason) => {
        this.closeInfo = { code, reason: String(reason) };
        for (const w of this.waiters) w();
        resolve(this.closeInfo);
      }),
    );
    ws.on('error', () => {});
  }

  /** Opens a socket from the client address `ip` and waits for HELLO. */
  static async open(url: string, ip = `10.9.${randomInt(256)}.${randomInt(1, 255)}`): Promise<TestSocket> {
    const socket = new TestSocket(new WebSocket(url, { headers: { 'x-forwarded-for': ip } }));
    await socket.next((f) => f.op === 10);
    return socket;
  }

  send(frame: unknown): void {
    this.ws.send(JSON.stringify(frame));
  }

  /** IDENTIFY, then READY's payload. */
  async identify(token: string): Promise<{ sessionId: string }> {
    this.send({ op: 2, d: { token } });
    return (await this.next((f) => f.t === 'READY')).d;
  }

  dispatches(t?: string): Frame[] {
    return this.frames.filter((f) => f.op === 0 && (t === undefined || f.t === t));
  }

  /** The first frame (received or coming) that matches; fails when the socket closes first. */
  next(match: (f: Frame) => boolean, timeoutMs = 10_000): Promise<Frame> {
    return this.until(() => this.frames.find(match), timeoutMs, 'frame');
  }

  /** The close code and reason, once the socket closed. */
  closeCode(timeoutMs = 10_000): Promise<{ code: number; reason: string }> {
    return this.until(() => this.closeInfo, timeoutMs, 'close', true);
  }

  private until<T>(found: () => T | undefined, timeoutMs: number, what: string, evenClosed = false): Promise<T> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const value = found();
        if (value !== undefined) return done(() => resolve(value));
        if (this.closeInfo && !evenClosed)
          return done(() => reject(new Error(`socket closed (${this.closeInfo?.code}) before the ${what}`)));
      };
      const timer = setTimeout(() => done(() => reject(new Error(`no ${what} within ${timeoutMs} ms`))), timeoutMs);
      const done = (settle: () => void) => {
        clearTimeout(timer);
        this.waiters.delete(check);
        settle();
      };
      this.waiters.add(check);
      check();
    });
  }
}
