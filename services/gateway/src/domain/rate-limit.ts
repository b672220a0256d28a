import { randomUUID } from 'node:crypto';
import type { RateTier } from '@chat/contracts';
import { rateLimitDecisions } from '@chat/kit';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { answerWithin } from '../db/redis.ts';
import { createMemoryWindows, type WindowVerdict } from './memory-window.ts';

/** Spec section 8. */
export const TIERS: Record<RateTier, { limit: number; windowMs: number }> = {
  auth: { limit: 5, windowMs: 60_000 },
  general: { limit: 300, windowMs: 60_000 },
  webhook: { limit: 30, windowMs: 60_000 },
};

/**
 * Everything the edge asks Redis about a request, in one atomic script and one round trip:
 * whether the caller's session is on the denylist (KEYS[3]), whether a guard window (KEYS[2], the
 * client's General window for a webhook execution) is already full, and one sliding window
 * (KEYS[1]) as a sorted set of request times on Redis's own clock, so replicas agree: trim,
 * count, admit, expire and report. An empty key name skips its part.
 */
const EDGE_CHECK = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local revoked = 0
if KEYS[3] ~= '' then revoked = redis.call('EXISTS', KEYS[3]) end
local function resetOf(key, window)
  local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  if oldest[2] then return tonumber(oldest[2]) + window end
  return now + window
end
if KEYS[2] ~= '' then
  local guardLimit = tonumber(ARGV[4])
  local guardWindow = tonumber(ARGV[5])
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - guardWindow)
  if redis.call('ZCARD', KEYS[2]) >= guardLimit then
    return {0, 0, resetOf(KEYS[2], guardWindow), now, revoked, 1}
  end
end
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local count = redis.call('ZCARD', KEYS[1])
local allowed = 0
if count < limit then
  redis.call('ZADD', KEYS[1], now, ARGV[3])
  count = count + 1
  allowed = 1
end
redis.call('PEXPIRE', KEYS[1], window)
return {allowed, limit - count, resetOf(KEYS[1], window), now, revoked, 0}
`;

/** Moves one counted request (ARGV[1]) from KEYS[1] to KEYS[2] (expiring after ARGV[2] ms). */
const MOVE_COUNT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZADD', KEYS[2], now, ARGV[1])
redis.call('PEXPIRE', KEYS[2], ARGV[2])
return 1
`;

type EdgeRedis = Redis & {
  edgeCheck(
    key: string,
    guardKey: string,
    denyKey: string,
    limit: number,
    windowMs: number,
    member: string,
    guardLimit: number,
    guardWindowMs: number,
  ): Promise<[number, number, number, number, number, number]>;
  moveCount(from: string, to: string, member: string, windowMs: number): Promise<number>;
};

/** One request as the edge counts it. */
export interface RateCheck {
  tier: RateTier;
  /** Who is counted: the client (its IP, IPv6 per /64), or the webhook id for the Webhook tier. */
  subject: string;
  /**
   * The client of a webhook execution: its General window must have room as well, and a failed
   * execution is charged there instead of to the webhook (see chargeToClient).
   */
  client?: string;
  /** The session of the bearer token, looked up on the denylist in the same round trip. */
  sessionId?: string;
}

export interface EdgeVerdict extends WindowVerdict {
  /** The session is on the Redis denylist (revoked before its tokens expire). */
  revoked: boolean;
  /**
   * A webhook execution that failed (a wrong token, an unknown webhook) is taken off the
   * webhook's window and counted in the client's General window: wrong guesses cannot lock a
   * real integration out, and they cost the guesser.
   */
  chargeToClient?: () => Promise<void>;
}

export interface RateLimiter {
  hit(check: RateCheck): Promise<EdgeVerdict>;
  /** Puts a session on the Redis denylist until `untilMs` (when its last token expires). */
  denySession(sessionId: string, untilMs: number): Promise<void>;
}

const WARN_EVERY_MS = 60_000;

/**
 * Redis windows, with a fallback when Redis does not answer: every tier counts in per-process
 * windows per key (client IP, or webhook id) at the same limits. Each client keeps its own 5 logins
 * a minute per process: never more than with Redis in one process, and no platform-wide lock-out
 * (one shared window let the whole platform log in 5 times a minute). The denylist then answers
 * "not revoked": the processes' own revocation lists still refuse. Redis counts as not answering
 * after `timeoutMs` (REDIS_TIMEOUT_MS) from sending the check.
 */
export function createRateLimiter(options: { redis: Redis; keyPrefix: string; log: Logger; timeoutMs: number }): RateLimiter {
  const redis = options.redis as EdgeRedis;
  // Sent with EVALSHA (EVAL once, when Redis does not know the script yet).
  redis.defineCommand('edgeCheck', { numberOfKeys: 3, lua: EDGE_CHECK });
  redis.defineCommand('moveCount', { numberOfKeys: 2, lua: MOVE_COUNT });
  const memory = createMemoryWindows();
  let lastWarning = 0;
  const windowKey = (tier: RateTier, subject: string) => `${options.keyPrefix}${tier}:${subject}`;
  const denyKey = (sessionId: string) => `${options.keyPrefix}revoked:${sessionId}`;
  const general = TIERS.general;
  const warn = (err: unknown) => {
    if (Date.now() - lastWarning < WARN_EVERY_MS) return;
    lastWarning = Date.now();
    options.log.warn({ err }, 'Redis unavailable: rate limits fall back to windows per client in this process');
  };

  return {
    async hit(check) {
      const verdict = await edgeHit(check);
      rateLimitDecisions.inc({ tier: check.tier, decision: verdict.allowed ? 'allowed' : 'limited' });
      return verdict;
    },
    async denySession(sessionId, untilMs) {
      const ttlMs = Math.ceil(untilMs - Date.now());
      if (ttlMs > 0) await redis.set(denyKey(sessionId), '1', 'PX', ttlMs);
    },
  };

  async function edgeHit(check: RateCheck): Promise<EdgeVerdict> {
    const { limit, windowMs } = TIERS[check.tier];
    const key = windowKey(check.tier, check.subject);
    const guardKey = check.client ? windowKey('general', check.client) : '';
    // Unique across replicas: a pid is not (every container's gateway is pid 1), and two members
    // that collide would count as one request.
    const member = randomUUID();
    try {
      const [allowed, remaining, resetAtMs, nowMs, revoked, byGuard] = await answerWithin(
        redis.edgeCheck(
          key,
          guardKey,
          check.sessionId ? denyKey(check.sessionId) : '',
          limit,
          windowMs,
          member,
          general.limit,
          general.windowMs,
        ),
        options.timeoutMs,
      );
      const verdict = {
        allowed: allowed === 1,
        limit: byGuard ? general.limit : limit,
        remaining,
        resetAtMs,
        nowMs,
        revoked: revoked === 1,
      };
      if (!guardKey || !verdict.allowed) return verdict;
      return {
        ...verdict,
        chargeToClient: () => answerWithin(redis.moveCount(key, guardKey, member, general.windowMs), options.timeoutMs).then(() => {}),
      };
    } catch (err) {
      warn(err);
      return memoryHit(check, key, guardKey);
    }
  }

  function memoryHit(check: RateCheck, key: string, guardKey: string): EdgeVerdict {
    const { limit, windowMs } = TIERS[check.tier];
    if (guardKey) {
      const guard = memory.peek(guardKey, general.limit, general.windowMs);
      if (!guard.allowed) return { ...guard, revoked: false };
    }
    const verdict = memory.hit(key, limit, windowMs);
    if (!guardKey || !verdict.allowed) return { ...verdict, revoked: false };
    return { ...verdict, revoked: false, chargeToClient: async () => memory.move(key, guardKey, verdict.nowMs) };
  }
}

/** The X-RateLimit-* headers of every answer, the socket's upgrade included. */
export function rateLimitHeaders(verdict: WindowVerdict): Record<string, string> {
  return {
    'x-ratelimit-limit': String(verdict.limit),
    'x-ratelimit-remaining': String(Math.max(0, verdict.remaining)),
    'x-ratelimit-reset': String(Math.ceil(verdict.resetAtMs / 1000)),
  };
}

/** Replicas of one platform share their windows; platforms that share a Redis (tests) do not. */
export function rateKeyPrefix(namespace: string): string {
  return namespace ? `rl:${namespace}:` : 'rl:';
}
