import { Redis } from 'ioredis';

/**
 * A connection whose commands fail after `timeoutMs` (a backstop against a hung Redis filling the
 * command queue; the rate checks bound their own wait with `answerWithin`), and fail at once while
 * disconnected instead of queueing. The socket's connections queue while reconnecting
 * (`queueWhileOffline`): a session write should wait, not fail.
 */
export function createRedis(url: string, timeoutMs: number, queueWhileOffline = false): Redis {
  const redis = new Redis(url, {
    commandTimeout: timeoutMs,
    enableAutoPipelining: true,
    enableOfflineQueue: queueWhileOffline,
    maxRetriesPerRequest: 0,
    connectTimeout: 1_000,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2_000),
  });
  // Connection errors are reported by the failing commands (and the health check), not thrown.
  redis.on('error', () => {});
  return redis;
}

/** Waits (bounded) for the first connection, so the first requests do not all fall back. */
export async function redisReady(redis: Redis, timeoutMs = 2_000): Promise<boolean> {
  if (redis.status === 'ready') return true;
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), timeoutMs);
    redis.once('ready', () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

/**
 * The answer to a Redis command, or a rejection when it has not come `ms` after the command went
 * out. An answer already waiting on the socket when the time is up still wins: a process that did
 * not run for a while (a GC pause, a starved CPU) has not seen Redis fail, and its rate check must
 * not fall back and admit what Redis counted and refused (ioredis's own commandTimeout fires in the
 * timers phase, before such an answer is read).
 */
export function answerWithin<T>(command: Promise<T>, ms: number): Promise<T> {
  return new Promise((resolve, reject) => {
    let settled = false;
    let timer: NodeJS.Timeout | undefined;
    const settle = (finish: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      finish();
    };
    // Auto-pipelined commands go out in the check phase, queued before this: the wait starts once sent.
    setImmediate(() => {
      if (settled) return;
      // One more turn after the time is up: its poll phase reads whatever Redis already answered.
      timer = setTimeout(() => setImmediate(() => settle(() => reject(new RedisTimeoutError(ms)))), ms);
    });
    command.then(
      (value) => settle(() => resolve(value)),
      (err) => settle(() => reject(err)),
    );
  });
}

export class RedisTimeoutError extends Error {
  constructor(ms: number) {
    super(`Redis did not answer within ${ms} ms`);
  }
}
