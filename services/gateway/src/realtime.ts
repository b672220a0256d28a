import { setTimeout as wait } from 'node:timers/promises';
import { PresenceSeenRpc, REALTIME_SUBJECTS, STREAMS, type UserDisconnectedEvent, UserGetRpc } from '@chat/contracts';
import {
  type Bus,
  type ConsumerHandle,
  ensureStream,
  publishEphemeralEvent,
  type RevocationList,
  requestRpc,
  serveRpc,
  type TokenVerifier,
  whenConnected,
} from '@chat/kit';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { dispatchFromStreams } from './bus/events.ts';
import type { GatewayConfig } from './config.ts';
import { type Ask, createAudience } from './domain/audience.ts';
import { createClientIpResolver } from './domain/client-ip.ts';
import { createDispatcher } from './domain/dispatch.ts';
import { createDispatchLease } from './domain/dispatch-lease.ts';
import { createPresence, seenByViewer } from './domain/presence.ts';
import type { RateLimiter } from './domain/rate-limit.ts';
import { createSessionStore } from './domain/session-store.ts';
import { createSocketServer, type SocketServer } from './routes/socket.ts';

export interface Realtime {
  sockets: SocketServer;
  stop(): Promise<void>;
}

/** Replicas of one platform share their sessions; platforms that share a Redis (tests) do not. */
export function realtimeKeyPrefix(namespace: string): string {
  return namespace ? `gw:${namespace}:` : 'gw:';
}

/**
 * The real-time socket's parts: sessions and presence in Redis, audiences asked of the services,
 * dispatch from JetStream, revocations from auth (`revocations`, the token verifier's list).
 * `redis` is a connection of its own (commands may take longer than a rate check's), `subscriber`
 * one in subscriber mode.
 */
export async function startRealtime(deps: {
  config: GatewayConfig;
  log: Logger;
  bus: Bus;
  redis: Redis;
  subscriber: Redis;
  tokens: TokenVerifier;
  limiter: RateLimiter;
  revocations: RevocationList;
}): Promise<Realtime> {
  const { config, log, bus, redis } = deps;
  const prefix = realtimeKeyPrefix(config.BUS_NAMESPACE);
  const livenessMs = Math.round(config.GATEWAY_HEARTBEAT_INTERVAL_MS * 1.5);
  const ask: Ask = (contract, data) => requestRpc(bus, contract, data);
  const store = createSessionStore({
    redis,
    prefix,
    resumeWindowMs: config.GATEWAY_RESUME_WINDOW_MS,
    livenessMs,
    bufferSize: config.GATEWAY_REPLAY_BUFFER,
  });
  const audience = createAudience({ ask, redis, prefix });
  const presence = createPresence({
    redis,
    prefix,
    livenessMs,
    announce: async (update) => {
      await store.deliver('PRESENCE_UPDATE', JSON.stringify(update), {
        userIds: await audience.acquaintances(update.userId),
      });
    },
    // Social ends the user's activity (it expires with the last session).
    lastSessionGone: async (userId, at) => {
      const data: UserDisconnectedEvent = { userId, at: at.toISOString() };
      await publishEphemeralEvent(bus, REALTIME_SUBJECTS.userDisconnected, data).catch((err) =>
        log.warn({ err, userId }, 'disconnection not published; the activity stays until its owner clears it'),
      );
    },
  });
  void whenConnected(bus, log, 'gateway stream', async () => {
    await ensureStream(bus, STREAMS.gateway);
    return undefined;
  });
  const sockets = createSocketServer({
    config,
    log,
    tokens: deps.tokens,
    limiter: deps.limiter,
    clientIp: createClientIpResolver(config.TRUSTED_PROXIES, config.FORWARDED_FOR_MODE),
    store,
    presence,
    ask,
    subscriber: deps.subscriber,
    publisher: redis,
  });
  // Bounded, as the rate limiter's first connection: a Redis away at start leaves sockets refused
  // until it answers, not the gateway down (HTTP needs no Redis).
  await Promise.race([sockets.ready, wait(2_000, undefined, { ref: false })]);
  // Social shows the seen status in its friend lists, guilds in its member lists, auth in a profile.
  const seenBy = seenByViewer(presence, (viewerId) => audience.acquaintances(viewerId));
  serveRpc(bus, log, PresenceSeenRpc, async ({ userIds, viewerId }) => ({ statuses: await seenBy(userIds, viewerId) }));
  // The list catches up on what it missed while this replica was away from the bus (an ordered
  // consumer), where a plain subscription loses it: those sessions' sockets close too.
  deps.revocations.onRevoked(({ sessionId }) => {
    sockets
      .revoke(sessionId)
      .catch((err) => log.warn({ err, sessionId }, 'revocation not written to Redis; this replica refuses it from memory'));
  });
  const reader: ConsumerHandle = dispatchFromStreams({
    bus,
    log,
    lease: createDispatchLease({ redis, prefix, ttlMs: config.GATEWAY_DISPATCH_LEASE_MS }),
    ...createDispatcher({ store, audience, presence, log, account: (userId) => ask(UserGetRpc, { userId }) }),
  });
  return {
    sockets,
    async stop() {
      await sockets.shutdown();
      await reader.stop();
    },
  };
}
