import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';

/**
 * Which replica turns the streams' events into dispatches, and how far it got.
 *
 * One replica at a time holds the lease (`<prefix>dispatch:lease`, a token per tenure, expiring
 * unless renewed) and reads every stream in order with a consumer of its own: no acks, events in
 * batches. Every delivery it makes carries its token as a fence that the delivery script checks in
 * the same step, so a replica that lost the lease (a pause longer than the lease, a partition)
 * can never deliver after its successor started. The position per stream (`dispatch:pos:<stream>`,
 * the last stream sequence dispatched) is saved under the same fence, and a successor starts right
 * after it: what was delivered after the last save comes again and is dropped by the event id.
 */
export interface DispatchLease {
  /** How long a tenure lasts unless renewed. */
  readonly ttlMs: number;
  /** Takes the lease when it is free; answers the fence of this tenure, or undefined. */
  acquire(): Promise<Fence | undefined>;
  /** Extends the tenure; false when the lease is no longer this tenure's. */
  renew(fence: Fence): Promise<boolean>;
  /** Gives the lease up at once (a graceful stop), so a standby takes over without waiting for it to expire. */
  release(fence: Fence): Promise<void>;
  /**
   * The last sequence of `stream` dispatched: the saved one, else `start` (saved now). `latest` is
   * the stream's last sequence now: a saved position beyond it is from a stream since made again.
   */
  position(stream: string, at: { start: number; latest: number }): Promise<number>;
  /** Saves how far this tenure got; false when the lease is no longer this tenure's. */
  savePosition(fence: Fence, stream: string, seq: number): Promise<boolean>;
}

/** The lease key and the token of one tenure: deliveries are refused once the key holds another value. */
export type Fence = readonly [key: string, token: string];

const RENEW = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
`;

const RELEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 1
`;

const SAVE_POSITION = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[2], ARGV[2])
return 1
`;

type LeaseRedis = Redis & {
  dispatchLeaseRenew(key: string, token: string, ttlMs: number): Promise<number>;
  dispatchLeaseRelease(key: string, token: string): Promise<number>;
  dispatchSavePosition(leaseKey: string, positionKey: string, token: string, seq: number): Promise<number>;
};

export function createDispatchLease(options: { redis: Redis; prefix: string; ttlMs: number }): DispatchLease {
  const redis = options.redis as LeaseRedis;
  redis.defineCommand('dispatchLeaseRenew', { numberOfKeys: 1, lua: RENEW });
  redis.defineCommand('dispatchLeaseRelease', { numberOfKeys: 1, lua: RELEASE });
  redis.defineCommand('dispatchSavePosition', { numberOfKeys: 2, lua: SAVE_POSITION });
  const leaseKey = `${options.prefix}dispatch:lease`;
  const positionKey = (stream: string) => `${options.prefix}dispatch:pos:${stream}`;

  return {
    ttlMs: options.ttlMs,
    async acquire() {
      const token = randomUUID();
      const taken = await redis.set(leaseKey, token, 'PX', options.ttlMs, 'NX');
      return taken === 'OK' ? [leaseKey, token] : undefined;
    },
    async renew([key, token]) {
      return (await redis.dispatchLeaseRenew(key, token, options.ttlMs)) === 1;
    },
    async release([key, token]) {
      await redis.dispatchLeaseRelease(key, token);
    },
    async position(stream, { start, latest }) {
      await redis.set(positionKey(stream), start, 'NX');
      const saved = Number(await redis.get(positionKey(stream)));
      return Number.isFinite(saved) && saved <= latest ? saved : latest;
    },
    async savePosition([key, token], stream, seq) {
      return (await redis.dispatchSavePosition(key, positionKey(stream), token, seq)) === 1;
    },
  };
}
