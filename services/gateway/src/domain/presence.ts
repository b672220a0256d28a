import type { ChosenStatus, PresenceUpdateData, SeenStatus } from '@chat/contracts';
import type { Redis } from 'ioredis';

/**
 * Who is connected, across replicas, and what others see. `p:<userId>` is a sorted set of the
 * user's live sessions scored by when they stop counting (refreshed by heartbeats, so the sessions
 * of a replica that died age out); `ps:<userId>` holds the chosen status, the custom status and
 * the status last shown; `pe` scores each user by their latest expiry, for the sweep.
 *
 * The seen status changes in one script (compare and set), so of two replicas noticing the same
 * change only one announces it.
 */
const RECOMPUTE = `
local p, uid, now = ARGV[1], ARGV[2], tonumber(ARGV[3])
local pkey, skey = p .. 'p:' .. uid, p .. 'ps:' .. uid
redis.call('ZREMRANGEBYSCORE', pkey, '-inf', now)
local connected = redis.call('ZCARD', pkey) > 0
local chosen = redis.call('HGET', skey, 'chosen') or 'online'
local custom = redis.call('HGET', skey, 'custom') or ''
local seen = chosen
if not connected or chosen == 'invisible' or chosen == 'offline' then seen = 'offline'; custom = '' end
local shown = (redis.call('HGET', skey, 'seen') or 'offline') .. '|' .. (redis.call('HGET', skey, 'shownCustom') or '')
if shown == seen .. '|' .. custom then return false end
redis.call('HSET', skey, 'seen', seen, 'shownCustom', custom)
redis.call('EXPIRE', skey, 2592000)
return {seen, custom}
`;

/** The status last shown of each user (ARGV[2..]), nil when never shown: one command for a whole list. */
const SEEN = `
local out = {}
for i = 2, #ARGV do out[i - 1] = redis.call('HGET', ARGV[1] .. 'ps:' .. ARGV[i], 'seen') or false end
return out
`;

/** The sweep's index outlives every replica's heartbeats by far; gone only when no replica runs for a day. */
const EXPIRY_INDEX_TTL_S = 86_400;

type PresenceRedis = Redis & {
  presenceRecompute(prefix: string, userId: string, now: number): Promise<[SeenStatus, string] | null>;
  presenceSeen(prefix: string, ...userIds: string[]): Promise<(SeenStatus | null)[]>;
};

export interface PresenceOptions {
  redis: Redis;
  prefix: string;
  /** A session counts as connected this long after its last heartbeat. */
  livenessMs: number;
  now?: () => number;
  /** Announces a change of what others see (PRESENCE_UPDATE to friends and co-members). */
  announce: (update: PresenceUpdateData) => Promise<void>;
}

export function createPresence(options: PresenceOptions) {
  const redis = options.redis as PresenceRedis;
  redis.defineCommand('presenceRecompute', { numberOfKeys: 0, lua: RECOMPUTE });
  redis.defineCommand('presenceSeen', { numberOfKeys: 0, lua: SEEN });
  const { prefix } = options;
  const now = options.now ?? Date.now;

  async function recompute(userId: string): Promise<void> {
    const changed = await redis.presenceRecompute(prefix, userId, now());
    if (changed) await options.announce({ userId, status: changed[0], customStatus: changed[1] });
  }

  async function mark(userId: string, sessionId: string): Promise<void> {
    const until = now() + options.livenessMs;
    await redis
      .multi()
      .zadd(`${prefix}p:${userId}`, until, sessionId)
      .pexpire(`${prefix}p:${userId}`, options.livenessMs * 2)
      .zadd(`${prefix}pe`, 'GT', until, userId)
      .expire(`${prefix}pe`, EXPIRY_INDEX_TTL_S)
      .exec();
  }

  return {
    recompute,
    /** A session of the user is connected (identify or resume). */
    async connected(userId: string, sessionId: string): Promise<void> {
      await mark(userId, sessionId);
      await recompute(userId);
    },
    /** A heartbeat keeps the session counted. */
    heartbeat: mark,
    async disconnected(userId: string, sessionId: string): Promise<void> {
      await redis.zrem(`${prefix}p:${userId}`, sessionId);
      await recompute(userId);
    },
    /** What the user chose (auth's profile: at identify, and on auth.presence.updated). */
    async chose(userId: string, status: ChosenStatus | 'offline', customStatus: string, announce = true): Promise<void> {
      await redis.hset(`${prefix}ps:${userId}`, 'chosen', status, 'custom', customStatus);
      if (announce) await recompute(userId);
    },
    /**
     * What others see of each user now (the status last shown; offline when never connected). One
     * script for the whole list: social asks it for every friend list it answers, and a command per
     * user cost the gateway as much as proxying the request.
     */
    async seen(userIds: string[]): Promise<Record<string, SeenStatus>> {
      if (userIds.length === 0) return {};
      const shown = await redis.presenceSeen(prefix, ...userIds);
      return Object.fromEntries(userIds.map((id, i) => [id, shown[i] ?? 'offline']));
    },
    /** Users whose sessions all aged out (their replica died): recomputed, so they show offline. */
    async sweep(): Promise<void> {
      const t = now();
      const expired = await redis.zrangebyscore(`${prefix}pe`, '-inf', t, 'LIMIT', 0, 500);
      if (expired.length === 0) return;
      await redis.zrem(`${prefix}pe`, ...expired);
      for (const userId of expired) await recompute(userId);
    },
  };
}

export type Presence = ReturnType<typeof createPresence>;
