import { Redis } from 'ioredis';

/**
 * The rate-limit connection: a command that does not answer within `timeoutMs` fails (the caller
 * falls back), and while disconnected commands fail at once instead of queueing. The socket's
 * connections queue while reconnecting (`queueWhileOffline`): a session write should wait, not fail.
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
