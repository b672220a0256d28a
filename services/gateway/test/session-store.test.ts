import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { createSessionStore, DUPLICATE, dispatchFrame, FENCED_OFF, parsePublished, STALE_AUDIENCE } from '../src/domain/session-store.ts';

/** The socket's sessions in a real Redis, on a clock the test moves. */

const redis = new Redis(inject('backing').redisUrl);
const subscriber = new Redis(inject('backing').redisUrl);
afterAll(() => {
  redis.disconnect();
  subscriber.disconnect();
});

const WINDOW_MS = 120_000;
let clock = 1_700_000_000_000;
const prefix = `gwtest:${randomUUID()}:`;
const store = createSessionStore({
  redis,
  prefix,
  resumeWindowMs: WINDOW_MS,
  livenessMs: 60_000,
  bufferSize: 3,
  now: () => clock,
});

async function session(node = 'node-a') {
  const ids = { sessionId: randomUUID(), userId: randomUUID(), authSid: randomUUID(), node };
  await store.open({ ...ids });
  await store.ready(ids.sessionId, '{"ready":true}');
  return ids;
}

describe('a session opened before its READY is made', () => {
  it('buffers what is dispatched meanwhile after READY (numbered from 2), and its buffer expires with it from the start', async () => {
    const ids = { sessionId: randomUUID(), userId: randomUUID(), authSid: randomUUID(), node: 'node-a' };
    const bufferKey = `${prefix}b:${ids.sessionId}`;
    await store.open(ids);
    expect(await store.deliver('MESSAGE_CREATE', '{"content":"early"}', { userIds: [ids.userId] })).toBe(1);
    // A replica that dies here leaves a buffer that expires as the session does.
    expect(await redis.pttl(bufferKey)).toBeGreaterThan(0);
    await store.ready(ids.sessionId, '{"ready":true}');
    const frames = await store.framesAfter(ids.sessionId, 0);
    expect(frames.map((f) => [f.seq, JSON.parse(f.frame).t])).toEqual([
      [1, 'READY'],
      [2, 'MESSAGE_CREATE'],
    ]);
    expect(await redis.zcard(bufferKey)).toBe(2);
  });
});

describe('delivery', () => {
  it('numbers each dispatch per session, buffers it and publishes it to the node holding the socket', async () => {
    const s = await session('node-live');
    const heard: string[] = [];
    await subscriber.subscribe(store.channelOf('node-live'));
    subscriber.on('message', (_c, m) => heard.push(m));
    // The event's JetStream time travels with the dispatch (the replicas measure the lag from it).
    expect(await store.deliver('MESSAGE_CREATE', '{"content":"a"}', { userIds: [s.userId] }, 'event-1', 1_700_000_000_123)).toBe(1);
    expect(await store.deliver('MESSAGE_CREATE', '{"content":"b"}', { userIds: [s.userId, s.userId] })).toBe(1);
    // The same event again (a redelivery) changes nothing.
    expect(await store.deliver('MESSAGE_CREATE', '{"content":"a"}', { userIds: [s.userId] }, 'event-1')).toBe(-1);
    // READY is the first, numbered 1 when the session is created.
    const frames = await store.framesAfter(s.sessionId, 0);
    expect(frames.map((f) => [f.seq, JSON.parse(f.frame)])).toEqual([
      [1, { op: 0, t: 'READY', s: 1, d: { ready: true } }],
      [2, { op: 0, t: 'MESSAGE_CREATE', s: 2, d: { content: 'a' } }],
      [3, { op: 0, t: 'MESSAGE_CREATE', s: 3, d: { content: 'b' } }],
    ]);
    await expect.poll(() => heard.length).toBe(2);
    const published = parsePublished(heard[0] as string);
    expect(published).toEqual({
      kind: 'dispatch',
      t: 'MESSAGE_CREATE',
      d: '{"content":"a"}',
      targets: [{ sessionId: s.sessionId, seq: 2 }],
      publishedAtMs: 1_700_000_000_123,
    });
    expect(parsePublished(heard[1] as string)).toStrictEqual({
      kind: 'dispatch',
      t: 'MESSAGE_CREATE',
      d: '{"content":"b"}',
      targets: [{ sessionId: s.sessionId, seq: 3 }],
      publishedAtMs: undefined,
    });
    expect(dispatchFrame('MESSAGE_CREATE', 2, '{"content":"a"}')).toBe(frames[1]?.frame);
  });

  it('refuses an audience whose versions moved, numbering nothing, and takes the same event from a fresh one', async () => {
    const s = await session();
    const versionKey = `gwtest:${randomUUID()}:v:server`;
    await redis.set(versionKey, 'v2');
    const event = randomUUID();
    const asCached = { userIds: [s.userId], guard: [[versionKey, 'v1']] as const };
    expect(await store.deliver('MESSAGE_CREATE', '{"n":1}', asCached, event)).toBe(STALE_AUDIENCE);
    // An empty cached audience is checked too: the change may have let someone in.
    expect(await store.deliver('MESSAGE_CREATE', '{"n":1}', { userIds: [], guard: [[versionKey, 'v1']] }, event)).toBe(STALE_AUDIENCE);
    expect((await store.framesAfter(s.sessionId, 0)).map((f) => f.seq)).toEqual([1]);
    // Not marked as delivered: the fresh audience gets it, once.
    expect(await store.deliver('MESSAGE_CREATE', '{"n":1}', { userIds: [s.userId], guard: [[versionKey, 'v2']] }, event)).toBe(1);
    expect(await store.deliver('MESSAGE_CREATE', '{"n":1}', { userIds: [s.userId] }, event)).toBe(DUPLICATE);
    // A version never set reads as empty, as the audience reads it.
    expect(await store.deliver('MESSAGE_CREATE', '{"n":2}', { userIds: [s.userId], guard: [[`${versionKey}:none`, '']] })).toBe(1);
    expect((await store.framesAfter(s.sessionId, 0)).map((f) => f.seq)).toEqual([1, 2, 3]);
  });

  it('refuses a delivery fenced by a lease another tenure holds now, numbering and marking nothing', async () => {
    const s = await session();
    const leaseKey = `gwtest:${randomUUID()}:dispatch:lease`;
    await redis.set(leaseKey, 'successor');
    const event = randomUUID();
    const fenced = (token: string) => ({ userIds: [s.userId], fence: [leaseKey, token] as const });
    expect(await store.deliver('MESSAGE_CREATE', '{"n":1}', fenced('predecessor'), event)).toBe(FENCED_OFF);
    // Even with nobody to deliver to, nor when the lease expired: only its holder's token passes.
    expect(
      await store.deliver(
        'MESSAGE_CREATE',
        '{"n":1}',
        { userIds: [], fence: [leaseKey, 'predecessor'], guard: [[leaseKey, 'successor']] },
        event,
      ),
    ).toBe(FENCED_OFF);
    await redis.del(leaseKey);
    expect(await store.deliver('MESSAGE_CREATE', '{"n":1}', fenced('predecessor'), event)).toBe(FENCED_OFF);
    expect((await store.framesAfter(s.sessionId, 0)).map((f) => f.seq)).toEqual([1]);
    await redis.set(leaseKey, 'successor');
    expect(await store.deliver('MESSAGE_CREATE', '{"n":1}', fenced('successor'), event)).toBe(1);
    expect(await store.deliver('MESSAGE_CREATE', '{"n":1}', fenced('successor'), event)).toBe(DUPLICATE);
    expect((await store.framesAfter(s.sessionId, 0)).map((f) => f.seq)).toEqual([1, 2]);
  });
});

describe('publishing', () => {
  it('sends one message per node for all its sessions, each with its own seq', async () => {
    const userId = randomUUID();
    const [a, b] = [randomUUID(), randomUUID()];
    await store.open({ sessionId: a, userId, authSid: randomUUID(), node: 'node-pair' });
    await store.ready(a, '{}');
    await store.open({ sessionId: b, userId, authSid: randomUUID(), node: 'node-pair' });
    await store.ready(b, '{}');
    await store.deliver('CHANNEL_CREATE', '{}', { sessionIds: [a] });
    const heard: string[] = [];
    const listener = new Redis(inject('backing').redisUrl);
    await listener.subscribe(store.channelOf('node-pair'));
    listener.on('message', (_c, m) => heard.push(m));
    expect(await store.deliver('TYPING_START', '{"x":1}', { userIds: [userId] })).toBe(2);
    await expect.poll(() => heard.length).toBe(1);
    const published = parsePublished(heard[0] as string);
    expect(published?.kind === 'dispatch' && published.targets.sort((x, y) => x.seq - y.seq)).toEqual([
      { sessionId: b, seq: 2 },
      { sessionId: a, seq: 3 },
    ]);
    listener.disconnect();
  });
});

describe('resume', () => {
  it('replays what came after seq while the session dropped less than the window ago', async () => {
    const s = await session();
    for (const c of ['a', 'b', 'c']) await store.deliver('MESSAGE_CREATE', JSON.stringify({ c }), { userIds: [s.userId] });
    await store.detach(s.sessionId, 'node-a');
    clock += WINDOW_MS - 1;
    const verdict = await store.checkResume(s.sessionId, s.userId, 2);
    expect(verdict.ok && verdict.frames.map((f) => f.seq)).toEqual([3, 4]);
  });

  it('numbers RESUMED right after the frames it replays, so later dispatches come after it', async () => {
    const s = await session();
    for (const c of ['a', 'b', 'c']) await store.deliver('MESSAGE_CREATE', JSON.stringify({ c }), { userIds: [s.userId] });
    const replayed = await store.replay(s.sessionId, 2);
    expect(replayed?.map((f) => [f.seq, JSON.parse(f.frame)])).toEqual([
      [3, { op: 0, t: 'MESSAGE_CREATE', s: 3, d: { c: 'b' } }],
      [4, { op: 0, t: 'MESSAGE_CREATE', s: 4, d: { c: 'c' } }],
      [5, { op: 0, t: 'RESUMED', s: 5, d: { replayed: 2 } }],
    ]);
    await store.deliver('MESSAGE_CREATE', '{"c":"d"}', { userIds: [s.userId] });
    // RESUMED is buffered like any dispatch: a second resume replays it in its place.
    expect((await store.framesAfter(s.sessionId, 4)).map((f) => JSON.parse(f.frame).t)).toEqual(['RESUMED', 'MESSAGE_CREATE']);
    expect(await store.replay(randomUUID(), 0)).toBeUndefined();
  });

  it('refuses once the window has passed since the drop', async () => {
    const s = await session();
    await store.detach(s.sessionId, 'node-a');
    clock += WINDOW_MS + 1;
    expect(await store.checkResume(s.sessionId, s.userId, 0)).toEqual({ ok: false, reason: 'expired' });
  });

  it('counts the drop of a replica that died (never detached) from the last heartbeat', async () => {
    const s = await session();
    clock += 30_000;
    await store.touch(s.sessionId, s.userId);
    clock += WINDOW_MS;
    expect((await store.checkResume(s.sessionId, s.userId, 0)).ok).toBe(true);
    clock += 2;
    expect(await store.checkResume(s.sessionId, s.userId, 0)).toEqual({ ok: false, reason: 'expired' });
  });

  it('refuses another user’s session, a seq from the future, and a seq older than the buffer keeps', async () => {
    const s = await session();
    for (const c of ['a', 'b', 'c', 'd', 'e']) await store.deliver('MESSAGE_CREATE', JSON.stringify({ c }), { userIds: [s.userId] });
    expect(await store.checkResume(s.sessionId, randomUUID(), 5)).toEqual({ ok: false, reason: 'wrong-user' });
    expect(await store.checkResume(s.sessionId, s.userId, 7)).toEqual({ ok: false, reason: 'future-seq' });
    // READY was 1, the five 2..6; the buffer keeps the last 3 (4, 5, 6): from seq 2, the 3rd is lost.
    expect(await store.checkResume(s.sessionId, s.userId, 2)).toEqual({ ok: false, reason: 'gap' });
    const fromThree = await store.checkResume(s.sessionId, s.userId, 3);
    expect(fromThree.ok && fromThree.frames.map((f) => f.seq)).toEqual([4, 5, 6]);
  });

  it('detaches only on the node that still holds the session', async () => {
    const s = await session('node-a');
    expect(await store.attach(s.sessionId, 'node-b', s.authSid)).toBe('node-a');
    // The old node's late close must not mark the session dropped: it lives on node-b.
    await store.detach(s.sessionId, 'node-a');
    expect(await store.attach(s.sessionId, 'node-c', s.authSid)).toBe('node-b');
  });

  it('belongs to the token session that resumed it last', async () => {
    const s = await session('node-a');
    const resumedWith = randomUUID();
    await store.attach(s.sessionId, 'node-b', resumedWith);
    const verdict = await store.checkResume(s.sessionId, s.userId, 1);
    expect(verdict.ok && verdict.session).toMatchObject({ authSid: resumedWith, node: 'node-b' });
  });
});

describe('limits and revocation', () => {
  it('counts identifies per user per day', async () => {
    const userId = randomUUID();
    const answers = [];
    for (let i = 0; i < 4; i++) answers.push(await store.countIdentify(userId, 3));
    expect(answers).toEqual([true, true, true, false]);
  });

  it('remembers a revoked token session', async () => {
    const authSid = randomUUID();
    expect(await store.isRevoked(authSid)).toBe(false);
    await store.markRevoked(authSid, 60_000);
    expect(await store.isRevoked(authSid)).toBe(true);
  });
});
