import type { RevocationList } from '@chat/kit';
import type { Logger } from 'pino';
import type { RateLimiter } from './rate-limit.ts';

/**
 * Copies each session revocation into the Redis denylist, where the rate check of every replica
 * sees it in the same round trip. Each replica writes it (the same key, idempotent); one that
 * cannot (Redis down) still refuses the session from its own memory.
 */
export function copyRevocationsToRedis(revocations: RevocationList, limiter: RateLimiter, log: Logger): void {
  revocations.onRevoked(({ sessionId, untilMs }) => {
    limiter.denySession(sessionId, untilMs).catch((err) => {
      log.warn({ err, sessionId }, 'could not copy a session revocation to Redis; this process refuses it from memory');
    });
  });
}
