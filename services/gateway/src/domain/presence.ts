import type { Activity, ChosenStatus, PresenceUpdateData, SeenStatus } from '@chat/contracts';
import type { Redis } from 'ioredis';
import type { Fence } from './dispatch-lease.ts';

/**
 * Who is connected, across replicas, and what others see. `p:<userId>` is a sorted set of the
 * user's live sessions scored by when they stop counting (refreshed by heartbeats, so the sessions
 * of a replica that died age out); `ps:<userId>` holds the chosen status, the custom status, the
 * activity (JSON, social's), what was last shown of them and whether any session was connected;
 * `pe` scores each user by their latest expiry, for the sweep.
 *
 * What others see changes in one script (compare and set), so of two replicas noticing the same
 * change only one announces it; likewise only one learns that the user's last session is gone.
 * Answers {changed, seen, customStatus, activity, lastSessionGone}.
 */
const RECOMPUTE = `
local p, uid, now = ARGV[1], ARGV[2], tonumber(ARGV[3])
local pkey, skey = p .. 'p:' .. uid, p .. 'ps:' .. uid
redis.call('ZREMRANGEBYSCORE', pkey, '-inf', now)
local connected = redis.call('ZCARD', pkey) > 0
local h = redis.call('HMGET', skey, 'chosen', 'custom', 'activity', 'seen', 'shownCustom', 'shownActivity', 'connected')
local custom, activity, seen = h[2] or '', h[3] or '', h[1] or 'online'
if not connected or seen == 'invisible' or seen == 'offline' then seen = 'offline'; custom = ''; activity = '' end
local gone = 0
if h[7] == '1' and not connected then gone = 1 end
redis.call('HSET', skey, 'connected', connected and '1' or '0')
redis.call('EXPIRE', skey, 2592000)
if (h[4] or 'offline') == seen and (h[5] or '') == custom and (h[6] or '') == activity then return {0, seen, custom, activity, gone} end
redis.call('HSET', skey, 'seen', seen, 'shownCustom', custom, 'shownActivity', activity)
return {1, seen, custom, activity, gone}
`;

/**
 * The status and the activity last shown of each user (ARGV[2..]), as pairs (nil when never shown):
 * one command for a whole list, as social asks it for every friend list it answers.
 */
const SEEN = `
local out = {}
for i = 2, #ARGV do
  local h = redis.call('HMGET', ARGV[1] .. 'ps:' .. ARGV[i], 'seen', 'shownActivity')
  out[2 * i - 3] = h[1] or false
  out[2 * i - 2] = h[2] or false
end
return out
`;

/**
 * The choice auth answered at identify, written only over the one read before auth was asked
 * (ARGV[2], '' for none): a choice an auth.presence.updated applied meanwhile is newer, and stays.
 */
const SEED = `
local key = ARGV[1]
if (redis.call('HGET', key, 'chosen') or '') ~= ARGV[2] then return 0 end
redis.call('HSET', key, 'chosen', ARGV[3], 'custom', ARGV[4])
return 1
`;

/**
 * Sets fields of a user's presence hash (ARGV[3], then field, value pairs) unless the stream readers'
 * lease (key ARGV[1], tenure token ARGV[2]; '' for none) is held by another tenure: a reader that
 * lost it must not apply an old choice over what its successor applied since. 1 when written.
 */
const WRITE_FENCED = `
if ARGV[1] ~= '' and redis.call('GET', ARGV[1]) ~= ARGV[2] then return 0 end
redis.call('HSET', ARGV[3], unpack(ARGV, 4))
return 1
`;

/** The sweep's index outlives every replica's heartbeats by far; gone only when no replica runs for a day. */
const EXPIRY_INDEX_TTL_S = 86_400;

type PresenceRedis = Redis & {
  presenceRecompute(prefix: string, userId: string, now: number): Promise<[0 | 1, SeenStatus, string, string, 0 | 1]>;
  presenceSeen(prefix: string, ...userIds: string[]): Promise<(string | null)[]>;
  presenceSeed(key: string, expected: string, status: string, customStatus: string): Promise<0 | 1>;
  presenceWriteFenced(fenceKey: string, token: string, key: string, ...fieldValues: string[]): Promise<0 | 1>;
};

export interface PresenceOptions {
  redis: Redis;
  prefix: string;
  /** A session counts as connected this long after its last heartbeat. */
  livenessMs: number;
  now?: () => number;
  /** Announces a change of what others see (PRESENCE_UPDATE to friends and co-members). */
  announce: (update: PresenceUpdateData) => Promise<void>;
  /** The user's last session closed on every replica (told once per disconnection). */
  lastSessionGone?: (userId: string, at: Date) => Promise<void>;
}

const activityOf = (json: string | null | undefined): Activity | null => (json ? (JSON.parse(json) as Activity) : null);

export function createPresence(options: PresenceOptions) {
  const redis = options.redis as PresenceRedis;
  redis.defineCommand('presenceRecompute', { numberOfKeys: 0, lua: RECOMPUTE });
  redis.defineCommand('presenceSeen', { numberOfKeys: 0, lua: SEEN });
  redis.defineCommand('presenceSeed', { numberOfKeys: 0, lua: SEED });
  redis.defineCommand('presenceWriteFenced', { numberOfKeys: 0, lua: WRITE_FENCED });
  const { prefix } = options;
  const now = options.now ?? Date.now;

  async function recompute(userId: string): Promise<void> {
    const at = now();
    const [changed, status, customStatus, activity, gone] = await redis.presenceRecompute(prefix, userId, at);
    if (changed === 1) await options.announce({ userId, status, customStatus, activity: activityOf(activity) });
    if (gone === 1) await options.lastSessionGone?.(userId, new Date(at));
  }

  /** The status and the activity others see of each user now, in one command. */
  async function shown(userIds: string[]): Promise<Record<string, { status: SeenStatus; activity: Activity | null }>> {
    if (userIds.length === 0) return {};
    const pairs = await redis.presenceSeen(prefix, ...userIds);
    return Object.fromEntries(
      userIds.map((id, i) => [id, { status: (pairs[2 * i] as SeenStatus | null) ?? 'offline', activity: activityOf(pairs[2 * i + 1]) }]),
    );
  }

  async function writeThenRecompute(userId: string, fence: Fence | undefined, ...fieldValues: string[]): Promise<boolean> {
    const written = await redis.presenceWriteFenced(fence?.[0] ?? '', fence?.[1] ?? '', `${prefix}ps:${userId}`, ...fieldValues);
    if (written === 0) return false;
    await recompute(userId);
    return true;
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
    /**
     * What the user chose (auth.presence.updated). False, and nothing changed, when `fence` (the
     * stream readers' lease that read the event) is held by another tenure now.
     */
    async chose(userId: string, status: ChosenStatus | 'offline', customStatus: string, fence?: Fence): Promise<boolean> {
      return writeThenRecompute(userId, fence, 'chosen', status, 'custom', customStatus);
    },
    /** The choice held now ('' for none): read before auth is asked at identify, for seedChoice. */
    async choiceNow(userId: string): Promise<string> {
      return (await redis.hget(`${prefix}ps:${userId}`, 'chosen')) ?? '';
    },
    /** Auth's answer at identify, unless a choice newer than `heldBefore` was applied meanwhile; not announced. */
    async seedChoice(userId: string, heldBefore: string, status: ChosenStatus, customStatus: string): Promise<void> {
      await redis.presenceSeed(`${prefix}ps:${userId}`, heldBefore, status, customStatus);
    },
    /**
     * What the user is playing (social's `social.activity.updated`); shown while others see them.
     * False, and nothing changed, when `fence` no longer holds (as chose).
     */
    async activity(userId: string, activity: Activity | null, fence?: Fence): Promise<boolean> {
      return writeThenRecompute(userId, fence, 'activity', activity ? JSON.stringify(activity) : '');
    },
    /** What others see of each user now (the status last shown; offline when never connected). */
    async seen(userIds: string[]): Promise<Record<string, SeenStatus>> {
      const seenNow = await shown(userIds);
      return Object.fromEntries(Object.entries(seenNow).map(([id, s]) => [id, s.status]));
    },
    shown,
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

/**
 * What a viewer (when given) may see of each user: a stranger is told nothing, as the socket tells
 * them nothing. Friendship and sharing a server go both ways, so the viewer's own acquaintances
 * (asked once, and only when someone listed is seen) decide for the whole list.
 */
export function seenByViewer(presence: Pick<Presence, 'seen'>, acquaintancesOf: (viewerId: string) => Promise<string[]>) {
  return async (userIds: string[], viewerId?: string): Promise<Record<string, SeenStatus>> => {
    const statuses = await presence.seen(userIds);
    if (viewerId === undefined) return statuses;
    const seen = userIds.filter((userId) => userId !== viewerId && statuses[userId] !== 'offline');
    if (seen.length === 0) return statuses;
    const known = new Set(await acquaintancesOf(viewerId));
    for (const userId of seen) if (!known.has(userId)) statuses[userId] = 'offline';
    return statuses;
  };
}
