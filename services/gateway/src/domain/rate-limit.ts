import { randomUUID } from 'node:crypto';
import type { RateTier } from '@chat/contracts';
import { rateLimitDecisions } from '@chat/kit';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { createMemoryWindows, type WindowVerdict } from './memory-window.ts';

/** Spec section 8. */
export const TIERS: Record<RateTier, { limit: number; windowMs: number }> = {
  auth: { limit: 5, windowMs: 60_000 },
  general: { limit: 300, windowMs: 60_000 },
  webhook: { limit: 30, windowMs: 60_000 },
};

/**
 * One sliding window per key as a sorted set of request times (Redis's own clock, so replicas
 * agree). Trim, count, admit, expire and report in one atomic script: one round trip, exact
 * under concurrency and across gateway replicas.
 */
const SLIDING_WINDOW = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
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
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local resetAt = now + window
if oldest[2] then resetAt = tonumber(oldest[2]) + window end
return {allowed, limit - count, resetAt, now}
`;

type SlidingWindowRedis = Redis & {
  slidingWindow(key: string, limit: number, windowMs: number, member: string): Promise<[number, number, number, number]>;
};

export interface RateLimiter {
  /** Counts one request of `subject` (a client IP, or a webhook id) in the tier's window. */
  hit(tier: RateTier, subject: string): Promise<WindowVerdict>;
}

const WARN_EVERY_MS = 60_000;

/**
 * Redis windows, with the fallback of the issue when Redis does not answer: General and Webhook
 * fail open onto per-process windows per key; Auth fails closed onto one strict per-process 5/60 s
 * window shared by every client, so an outage never opens the door to password guessing.
 */
export function createRateLimiter(options: { redis: Redis; keyPrefix: string; log: Logger }): RateLimiter {
  const redis = options.redis as SlidingWindowRedis;
  // Sent with EVALSHA (EVAL once, when Redis does not know the script yet).
  redis.defineCommand('slidingWindow', { numberOfKeys: 1, lua: SLIDING_WINDOW });
  const memory = createMemoryWindows();
  let lastWarning = 0;
  // Unique across replicas: a pid is not (every container's gateway is pid 1), and two members that
  // collide would count as one request.
  const member = () => randomUUID();

  return {
    async hit(tier, subject) {
      const verdict = await windowHit(tier, subject);
      rateLimitDecisions.inc({ tier, decision: verdict.allowed ? 'allowed' : 'limited' });
      return verdict;
    },
  };

  async function windowHit(tier: RateTier, subject: string): Promise<WindowVerdict> {
    const { limit, windowMs } = TIERS[tier];
    const key = `${options.keyPrefix}${tier}:${subject}`;
    try {
      const [allowed, remaining, resetAtMs, nowMs] = await redis.slidingWindow(key, limit, windowMs, member());
      return { allowed: allowed === 1, limit, remaining, resetAtMs, nowMs };
    } catch (err) {
      if (Date.now() - lastWarning >= WARN_EVERY_MS) {
        lastWarning = Date.now();
        options.log.warn({ err }, 'Redis unavailable: rate limits fall back to this process (Auth tier strict)');
      }
      return memory(tier === 'auth' ? 'auth:*' : key, limit, windowMs);
    }
  }
}

/** Replicas of one platform share their windows; platforms that share a Redis (tests) do not. */
export function rateKeyPrefix(namespace: string): string {
  return namespace ? `rl:${namespace}:` : 'rl:';
}
