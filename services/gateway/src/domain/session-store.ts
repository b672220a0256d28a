import type { Redis } from 'ioredis';
import type { Fence } from './dispatch-lease.ts';

/**
 * Sessions of the real-time socket, kept in Redis so that any replica can resume them:
 *
 * - `s:<sid>` hash: userId, authSid (the session of the token that identified or last resumed it),
 *   seq (last dispatch numbered), node (the replica holding its socket, '' when none), seenAt (last
 *   sign of life, ms), detachedAt (ms).
 * - `b:<sid>` sorted set: the session's dispatch frames scored by seq, the last `bufferSize` kept:
 *   the replay buffer of RESUME.
 * - `u:<userId>` set: the user's sessions, so an event for a user reaches each of them.
 * - `n:<node>` pub/sub channel of a replica: per dispatch one message "D <t> <publishedAtMs>\n<sid>:<seq>,...\n<d>"
 *   for the sessions it holds (publishedAtMs: the event's JetStream time, empty for dispatches of
 *   no event; the dispatch lag is measured from it), and "K <sid>" when a resume elsewhere took a
 *   session over.
 *
 * A dispatch is numbered, buffered and published in one script, so the buffer and the live stream
 * agree: a socket drops what it already sent (seq), and a resume reads the buffer then the stream.
 * The scripts build key names from the prefix, so they expect one Redis (not a cluster).
 */

const DELIVER = `
local p = ARGV[1]
-- A dispatch of the stream readers' lease (ARGV[8] its key, ARGV[9] the tenure's token): refused
-- once another tenure holds it, so a reader that lost the lease never delivers behind its successor.
if ARGV[8] ~= '' and redis.call('GET', ARGV[8]) ~= ARGV[9] then return -3 end
-- A delivery sent before the one it follows (the event id ARGV[10]) was answered: refused unless
-- that one landed, so that a stream's dispatches never overtake each other.
if ARGV[10] ~= '' and redis.call('EXISTS', p .. 'e:' .. ARGV[10]) == 0 then return -4 end
-- The audience was computed at these versions (key, value pairs): if one moved, nothing is done.
local guarded = tonumber(ARGV[11])
for i = 12, 11 + 2 * guarded, 2 do
  if (redis.call('GET', ARGV[i]) or '') ~= ARGV[i + 1] then return -2 end
end
if ARGV[2] ~= '' then
  if not redis.call('SET', p .. 'e:' .. ARGV[2], '1', 'NX', 'EX', 600) then return -1 end
end
local t, d, cap, mode = ARGV[3], ARGV[4], tonumber(ARGV[5]), ARGV[6]
local sent = 0
local byNode = {}
-- Three or four commands per session: a fan-out to a thousand sessions holds Redis for milliseconds.
-- The buffer's expiry is not touched here: it is set with the session's (open, ready, touch, attach,
-- detach), and a buffer is never emptied (the newest frame stays), so it never loses its expiry.
local function deliver(sid)
  local skey = p .. 's:' .. sid
  local node = redis.call('HGET', skey, 'node')
  if not node then return false end
  local seq = redis.call('HINCRBY', skey, 'seq', 1)
  local frame = '{"op":0,"t":"' .. t .. '","s":' .. seq .. ',"d":' .. d .. '}'
  local bkey = p .. 'b:' .. sid
  redis.call('ZADD', bkey, seq, frame)
  if seq > cap then redis.call('ZREMRANGEBYSCORE', bkey, '-inf', seq - cap) end
  if node ~= '' then
    byNode[node] = byNode[node] or {}
    table.insert(byNode[node], sid .. ':' .. seq)
  end
  sent = sent + 1
  return true
end
for i = 12 + 2 * guarded, #ARGV do
  if mode == 's' then
    deliver(ARGV[i])
  else
    local ukey = p .. 'u:' .. ARGV[i]
    for _, sid in ipairs(redis.call('SMEMBERS', ukey)) do
      if not deliver(sid) then redis.call('SREM', ukey, sid) end
    end
  end
end
-- One message per replica, however many of its sessions get the dispatch (see parsePublished).
for node, entries in pairs(byNode) do
  redis.call('PUBLISH', p .. 'n:' .. node, 'D ' .. t .. ' ' .. ARGV[7] .. '\\n' .. table.concat(entries, ',') .. '\\n' .. d)
end
return sent
`;

/**
 * The frames a resume replays and RESUMED numbered right after them, in one step: no dispatch can
 * be numbered between the last frame replayed and RESUMED, so `replayed` counts exactly the frames
 * the client gets before it, and whatever is dispatched later comes after it. Nil for a session gone.
 */
const REPLAY = `
local skey, bkey = ARGV[1] .. 's:' .. ARGV[2], ARGV[1] .. 'b:' .. ARGV[2]
if redis.call('EXISTS', skey) == 0 then return nil end
local frames = redis.call('ZRANGEBYSCORE', bkey, '(' .. ARGV[3], '+inf', 'WITHSCORES')
local seq = redis.call('HINCRBY', skey, 'seq', 1)
local resumed = '{"op":0,"t":"RESUMED","s":' .. seq .. ',"d":{"replayed":' .. (#frames / 2) .. '}}'
redis.call('ZADD', bkey, seq, resumed)
if seq > tonumber(ARGV[4]) then redis.call('ZREMRANGEBYSCORE', bkey, '-inf', seq - tonumber(ARGV[4])) end
table.insert(frames, resumed)
table.insert(frames, tostring(seq))
return frames
`;

/** Detaches only when this node still holds the session (a resume elsewhere took it over otherwise). */
const DETACH = `
local skey = ARGV[1] .. 's:' .. ARGV[2]
if redis.call('HGET', skey, 'node') ~= ARGV[3] then return 0 end
redis.call('HSET', skey, 'node', '', 'detachedAt', ARGV[4])
redis.call('PEXPIRE', skey, ARGV[5])
redis.call('PEXPIRE', ARGV[1] .. 'b:' .. ARGV[2], ARGV[5])
return 1
`;

/** Ends the session for good (ARGV[3]: its user), when ARGV[4] is '' or the node holding it; 1 when it did. */
const REMOVE = `
local skey = ARGV[1] .. 's:' .. ARGV[2]
if ARGV[4] ~= '' and redis.call('HGET', skey, 'node') ~= ARGV[4] then return 0 end
redis.call('DEL', skey, ARGV[1] .. 'b:' .. ARGV[2])
redis.call('SREM', ARGV[1] .. 'u:' .. ARGV[3], ARGV[2])
return 1
`;

/** What a session's buffer holds (at 0, before every dispatch) from its opening until READY is buffered. */
const OPENED = 'opened';

type ScriptedRedis = Redis & {
  socketDeliver(...args: (string | number)[]): Promise<number>;
  socketDetach(prefix: string, sid: string, node: string, now: number, ttl: number): Promise<number>;
  socketRemove(prefix: string, sid: string, userId: string, heldBy: string): Promise<number>;
  socketReplay(prefix: string, sid: string, after: number, cap: number): Promise<string[] | null>;
};

/** Version keys and the values an audience was computed at (domain/audience.ts). */
export type VersionGuard = readonly (readonly [key: string, value: string])[];

/**
 * What deliver answers for a redelivered event, for an audience whose versions moved, for a fence
 * that no longer holds, and for a delivery whose predecessor (`after`) has not landed.
 */
export const DUPLICATE = -1;
export const STALE_AUDIENCE = -2;
export const FENCED_OFF = -3;
export const OUT_OF_ORDER = -4;

/** A user's set of sessions outlives any of them (refreshed by heartbeats); dead members are dropped on delivery. */
const USER_SET_TTL_S = 86_400;

export interface StoredSession {
  sessionId: string;
  userId: string;
  authSid: string;
  seq: number;
  node: string;
  seenAt: number;
  detachedAt: number;
}

export interface SessionStoreOptions {
  redis: Redis;
  /** `gw:<namespace>:`: replicas of one platform share it. */
  prefix: string;
  /** RESUME is accepted this long after the socket dropped (120 s). */
  resumeWindowMs: number;
  /** How long a live socket may go without a sign of life before it counts as dropped. */
  livenessMs: number;
  bufferSize: number;
  /** Injected so that the resume window can be tested without waiting. */
  now?: () => number;
}

export type ResumeVerdict =
  | { ok: true; session: StoredSession; frames: { seq: number; frame: string }[] }
  | { ok: false; reason: 'unknown' | 'expired' | 'wrong-user' | 'gap' | 'future-seq' };

/** Frames from a WITHSCORES reply of the buffer: frame, seq, frame, seq... */
function framesOf(raw: string[]): { seq: number; frame: string }[] {
  const frames: { seq: number; frame: string }[] = [];
  for (let i = 0; i < raw.length; i += 2) frames.push({ frame: raw[i] as string, seq: Number(raw[i + 1]) });
  return frames;
}

/** A dispatch frame as the buffer holds it and a socket sends it. */
export const dispatchFrame = (t: string, seq: number, d: string) => `{"op":0,"t":"${t}","s":${seq},"d":${d}}`;

/**
 * The same frame for many sessions: the payload is encoded once, and each session's frame is its
 * sequence spliced between two shared byte ranges (a fan-out to thousands of sockets would
 * otherwise build and UTF-8 encode the whole frame once per socket).
 */
export function dispatchFrames(t: string, d: string): (seq: number) => Buffer {
  const head = Buffer.from(`{"op":0,"t":"${t}","s":`);
  const tail = Buffer.from(`,"d":${d}}`);
  return (seq) => {
    const digits = String(seq);
    const frame = Buffer.allocUnsafe(head.length + digits.length + tail.length);
    head.copy(frame, 0);
    frame.write(digits, head.length, 'latin1');
    tail.copy(frame, head.length + digits.length);
    return frame;
  };
}

/** What a replica hears on its channel. */
export type Published =
  | { kind: 'dispatch'; t: string; d: string; targets: { sessionId: string; seq: number }[]; publishedAtMs?: number }
  | { kind: 'kick'; sessionId: string };

export function parsePublished(message: string): Published | undefined {
  if (message.startsWith('K ')) return { kind: 'kick', sessionId: message.slice(2) };
  if (!message.startsWith('D ')) return undefined;
  const first = message.indexOf('\n');
  const second = message.indexOf('\n', first + 1);
  const targets = message
    .slice(first + 1, second)
    .split(',')
    .map((pair) => {
      const colon = pair.lastIndexOf(':');
      return { sessionId: pair.slice(0, colon), seq: Number(pair.slice(colon + 1)) };
    });
  const [t = '', publishedAt] = message.slice(2, first).split(' ');
  const publishedAtMs = publishedAt ? Number(publishedAt) : undefined;
  return { kind: 'dispatch', t, d: message.slice(second + 1), targets, publishedAtMs };
}

/** The message that tells a replica a session it held was resumed elsewhere. */
export const kickMessage = (sessionId: string) => `K ${sessionId}`;

export function createSessionStore(options: SessionStoreOptions) {
  const redis = options.redis as ScriptedRedis;
  redis.defineCommand('socketDeliver', { numberOfKeys: 0, lua: DELIVER });
  redis.defineCommand('socketDetach', { numberOfKeys: 0, lua: DETACH });
  redis.defineCommand('socketRemove', { numberOfKeys: 0, lua: REMOVE });
  redis.defineCommand('socketReplay', { numberOfKeys: 0, lua: REPLAY });
  const { prefix, bufferSize } = options;
  const now = options.now ?? Date.now;
  const key = (kind: string, id: string) => `${prefix}${kind}:${id}`;
  // Kept while attached (refreshed by heartbeats), so a dead replica's sessions age out.
  const attachedTtl = () => options.resumeWindowMs + options.livenessMs;

  async function load(sessionId: string): Promise<StoredSession | undefined> {
    const h = await redis.hgetall(key('s', sessionId));
    if (!h.userId) return undefined;
    return {
      sessionId,
      userId: h.userId,
      authSid: h.authSid ?? '',
      seq: Number(h.seq ?? 0),
      node: h.node ?? '',
      seenAt: Number(h.seenAt ?? 0),
      detachedAt: Number(h.detachedAt ?? 0),
    };
  }

  async function framesAfter(sessionId: string, seq: number): Promise<{ seq: number; frame: string }[]> {
    return framesOf(await redis.zrangebyscore(key('b', sessionId), `(${seq}`, '+inf', 'WITHSCORES'));
  }

  return {
    channelOf: (node: string) => key('n', node),
    /** The buffered dispatch frames of a session after `seq`, in order. */
    framesAfter,

    /**
     * A new session held by `node`, reachable at once: dispatches from now on are numbered from 2
     * and buffered, while READY (number 1, `ready`) is still being made. So nothing that happens
     * while its snapshot is read is lost to it.
     */
    async open(s: { sessionId: string; userId: string; authSid: string; node: string }): Promise<void> {
      const ttl = attachedTtl();
      await redis
        .multi()
        .hset(key('s', s.sessionId), { userId: s.userId, authSid: s.authSid, seq: 1, node: s.node, seenAt: now(), detachedAt: 0 })
        .pexpire(key('s', s.sessionId), ttl)
        // The buffer exists, with the session's expiry, before a dispatch can land in it: a replica
        // that dies before READY leaves nothing behind that never expires. READY replaces the mark.
        .zadd(key('b', s.sessionId), 0, OPENED)
        .pexpire(key('b', s.sessionId), ttl)
        .sadd(key('u', s.userId), s.sessionId)
        .expire(key('u', s.userId), USER_SET_TTL_S)
        .exec();
    },

    /** Buffers the session's READY as its dispatch number 1 (a RESUME replays it like any other). Answers the frame to send. */
    async ready(sessionId: string, readyJson: string): Promise<string> {
      const frame = dispatchFrame('READY', 1, readyJson);
      await redis
        .multi()
        .zrem(key('b', sessionId), OPENED)
        .zadd(key('b', sessionId), 1, frame)
        .pexpire(key('b', sessionId), attachedTtl())
        .exec();
      return frame;
    },

    /**
     * Numbers, buffers and publishes one dispatch for every session of `userIds` (or for the
     * sessions named, with `sessionIds`). With a `guard` (the versions a cached audience was
     * computed at) nothing is done when one of them moved: the caller computes the audience again.
     * `dedupeId` (an event id) makes a redelivered event a no-op; `publishedAtMs` (the event's
     * JetStream time) travels to the replicas, which measure the lag. With a `fence` (the stream
     * readers' lease) nothing is done once another tenure holds it; with `after` (the dedupeId of
     * the delivery this one follows, sent but not answered yet), nothing is done unless that one
     * landed. Answers how many sessions got it, DUPLICATE, STALE_AUDIENCE, FENCED_OFF or OUT_OF_ORDER.
     */
    deliver(
      t: string,
      payloadJson: string,
      targets: { userIds?: string[]; sessionIds?: string[]; guard?: VersionGuard; fence?: Fence; after?: string },
      dedupeId = '',
      publishedAtMs?: number,
    ): Promise<number> {
      const ids = targets.sessionIds ?? [...new Set(targets.userIds ?? [])];
      const guard = targets.guard ?? [];
      // An empty audience is checked too: the versions may have moved to let someone in. An event's
      // delivery always runs: its mark is what the next delivery of its stream may wait for.
      if (ids.length === 0 && guard.length === 0 && !dedupeId) return Promise.resolve(0);
      const mode = targets.sessionIds ? 's' : 'u';
      return redis.socketDeliver(
        prefix,
        dedupeId,
        t,
        payloadJson,
        bufferSize,
        mode,
        publishedAtMs ?? '',
        targets.fence?.[0] ?? '',
        targets.fence?.[1] ?? '',
        targets.after ?? '',
        guard.length,
        ...guard.flat(),
        ...ids,
      );
    },

    /** A heartbeat: the session is alive on `node`. */
    async touch(sessionId: string, userId: string): Promise<void> {
      await redis
        .multi()
        .expire(key('u', userId), USER_SET_TTL_S)
        .hset(key('s', sessionId), 'seenAt', now())
        .pexpire(key('s', sessionId), attachedTtl())
        .pexpire(key('b', sessionId), attachedTtl())
        .exec();
    },

    /**
     * The socket closed: resumable for the window from now. False when `node` no longer holds the
     * session (a RESUME on another replica took it before this close was handled): nothing changes.
     */
    async detach(sessionId: string, node: string): Promise<boolean> {
      return (await redis.socketDetach(prefix, sessionId, node, now(), options.resumeWindowMs)) === 1;
    },

    /**
     * Gone for good (revoked, resumed too late, or ended by its client's close 1000 or 1001). With
     * `heldBy`, only while that node holds it (false otherwise, nothing changed): a RESUME on another
     * replica may have taken it before the old socket's close was handled.
     */
    async remove(sessionId: string, userId: string, heldBy = ''): Promise<boolean> {
      return (await redis.socketRemove(prefix, sessionId, userId, heldBy)) === 1;
    },

    /**
     * May this user resume this session from `seq`? When a replica died without detaching, the
     * drop counts from the last sign of life. Answers the buffered frames after `seq`.
     */
    async checkResume(sessionId: string, userId: string, seq: number): Promise<ResumeVerdict> {
      const session = await load(sessionId);
      if (!session) return { ok: false, reason: 'unknown' };
      if (session.userId !== userId) return { ok: false, reason: 'wrong-user' };
      const droppedAt = session.node === '' ? session.detachedAt : session.seenAt;
      if (now() - droppedAt > options.resumeWindowMs) return { ok: false, reason: 'expired' };
      if (seq > session.seq) return { ok: false, reason: 'future-seq' };
      const frames = await framesAfter(sessionId, seq);
      // The buffer keeps the last bufferSize dispatches: anything older is lost, so no exact replay.
      if (session.seq > seq && frames[0]?.seq !== seq + 1) return { ok: false, reason: 'gap' };
      return { ok: true, session, frames };
    },

    /**
     * What a resume from `seq` sends: the buffered frames after it, then RESUMED `{replayed}`,
     * numbered in the same step; undefined when the session is gone meanwhile.
     */
    async replay(sessionId: string, seq: number): Promise<{ seq: number; frame: string }[] | undefined> {
      const raw = await redis.socketReplay(prefix, sessionId, seq, bufferSize);
      return raw ? framesOf(raw) : undefined;
    },

    /**
     * `node` holds the session now, for the token session `authSid` that resumed it; answers the
     * node that held it before ('' when none).
     */
    async attach(sessionId: string, node: string, authSid: string): Promise<string> {
      const [[, previous]] = (await redis
        .multi()
        .hget(key('s', sessionId), 'node')
        .hset(key('s', sessionId), 'node', node, 'authSid', authSid, 'seenAt', now(), 'detachedAt', 0)
        .pexpire(key('s', sessionId), attachedTtl())
        .pexpire(key('b', sessionId), attachedTtl())
        .exec()) as [[Error | null, string | null]];
      return previous ?? '';
    },

    /** Remembers a revoked token session, so a resume or identify with a still-valid token fails. */
    async markRevoked(authSid: string, ttlMs: number): Promise<void> {
      await redis.set(key('r', authSid), '1', 'PX', ttlMs);
    },

    /** Whether any of these token sessions was revoked: one round trip, each session asked once. */
    async isRevoked(...authSids: string[]): Promise<boolean> {
      return (await redis.exists(...[...new Set(authSids)].map((sid) => key('r', sid)))) > 0;
    },

    /** Counts one IDENTIFY of the user in today's window; false over `limit`. */
    async countIdentify(userId: string, limit: number): Promise<boolean> {
      const day = Math.floor(now() / 86_400_000);
      const k = key('id', `${userId}:${day}`);
      const [[, count]] = (await redis.multi().incr(k).expire(k, 86_400).exec()) as [[Error | null, number]];
      return count <= limit;
    },
  };
}

export type SessionStore = ReturnType<typeof createSessionStore>;
