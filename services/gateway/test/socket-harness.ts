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
  type Logger,
  loadConfig,
  type Revocation,
  type RevocationList,
  revocationRetentionMs,
  serveRpc,
  watchRevocations,
} from '@chat/kit';
import { createTestIssuer, deleteNamespaceStreams, GatewayClient, TEST_AUDIENCE, TEST_ISSUER } from '@chat/testkit';
import { Redis as IORedis } from 'ioredis';
import { inject, vi } from 'vitest';
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
  options: {
    env?: Record<string, string>;
    natsUrl?: string;
    revocations?: 'fed' | 'watched';
    /** Where the socket's subscriber connects (a proxy the test may cut). */
    subscriberUrl?: string;
    log?: Logger;
  } = {},
) {
  const namespace = newNamespace();
  const config = loadConfig(GatewayConfig, {
    NODE_ENV: 'test',
    LOG_LEVEL: 'silent',
    BUS_NAMESPACE: namespace,
    TRUSTED_PROXIES: '127.0.0.1',
    ...options.env,
  });
  const log = options.log ?? createLogger({ service: 'gateway', level: 'silent' });
  const bus = await connectBus({ url: inject('backing').natsUrl, namespace, name: 'gateway-socket-test', log });
  await ensureStream(bus, STREAMS.auth);
  const gatewayBus = options.natsUrl ? await connectBus({ url: options.natsUrl, namespace, name: 'gateway-under-test', log }) : bus;
  const redisUrl = inject('backing').redisUrl;
  const [redis, subscriber, rateRedis] = [
    createRedis(redisUrl, 5_000, true),
    createRedis(options.subscriberUrl ?? redisUrl, 5_000, true),
    createRedis(redisUrl, 5_000),
  ];
  const limiter = createRateLimiter({ redis: rateRedis, keyPrefix: rateKeyPrefix(namespace), log, timeoutMs: 3_000 });
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
    baseUrl: base,
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
  /** Runs before auth's answer for that user: what happens while the gateway waits for it. */
  const beforeUserGet = new Map<string, () => Promise<void>>();
  serveRpc(bus, log, UserGetRpc, async ({ userId }) => {
    await beforeUserGet.get(userId)?.();
    return userRecord(userId);
  });
  serveRpc(bus, log, UserServersRpc, async () => ({ serverIds: [] }));
  serveRpc(bus, log, UserConversationsRpc, async () => ({ conversationIds: [] }));
  serveRpc(bus, log, UserFriendsRpc, async () => ({ userIds: [] }));
  serveRpc(bus, log, UserComembersRpc, async () => ({ userIds: [] }));
  serveRpc(bus, log, ChannelViewersRpc, async ({ channelId }) => {
    const channel = viewers.get(channelId);
    return { channelId, serverId: channel?.serverId ?? crypto.randomUUID(), userIds: channel?.userIds ?? [] };
  });
  serveRpc(bus, log, ServerMembersRpc, async ({ serverId }) => ({ userIds: members.get(serverId) ?? [] }));
  return { viewers, members, beforeUserGet };
}

/** Auth's answer for a user: online, no custom status. */
function userRecord(userId: string) {
  return {
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
  };
}

/**
 * A client of the harness's gateway from the client address `ip` (a fresh one by default, so that
 * each socket has its own upgrade window): HELLO received, no heartbeats of its own.
 */
export function openSocket(baseUrl: string, ip = `10.9.${randomInt(256)}.${randomInt(1, 255)}`): Promise<GatewayClient> {
  return GatewayClient.connect(baseUrl, { ip, heartbeat: false });
}
