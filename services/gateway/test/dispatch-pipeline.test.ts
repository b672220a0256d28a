import { randomUUID } from 'node:crypto';
import { GUILDS_SUBJECTS, MESSAGES_SUBJECTS, SOCIAL_SUBJECTS, STREAMS } from '@chat/contracts';
import { channelMessageRecord } from '@chat/testkit';
import { describe, expect, it, vi } from 'vitest';
import { dispatchFromStreams } from '../src/bus/events.ts';
import { type Ask, createAudience } from '../src/domain/audience.ts';
import { createDispatcher } from '../src/domain/dispatch.ts';
import { createDispatchLease } from '../src/domain/dispatch-lease.ts';
import type { Presence } from '../src/domain/presence.ts';
import { createSessionStore, DUPLICATE, OUT_OF_ORDER } from '../src/domain/session-store.ts';
import { notAsked, streamReaderBacking } from './helpers.ts';

/**
 * The stream reader with the real dispatcher, store and audience (real Redis and NATS; guilds'
 * viewer RPC is a list the test sets): deliveries are sent before those in flight are answered, and
 * what lands is still every event once, in stream order.
 */

const { log, bus, redis } = await streamReaderBacking('gateway-dispatch-pipeline-test');

const serverId = randomUUID();
const channelId = randomUUID();
const userId = randomUUID();
const ask = vi.fn(async () => ({ userIds: [userId] })) as unknown as Ask;

function platformOf(prefix: string) {
  const store = createSessionStore({ redis, prefix, resumeWindowMs: 120_000, livenessMs: 60_000, bufferSize: 1_000 });
  const audience = createAudience({ ask, redis, prefix });
  // Channel messages never reach presence.
  const dispatcher = createDispatcher({ store, audience, presence: {} as Presence, log, account: notAsked });
  return { store, audience, dispatcher };
}

function messageEvent(content: string) {
  const data = channelMessageRecord({ channelId, serverId, authorId: userId, content });
  return { id: randomUUID(), subject: MESSAGES_SUBJECTS.messageCreated, occurredAt: data.createdAt, data };
}

async function publish(contents: string[]): Promise<void> {
  // Published without waiting for each ack: the reader gets them in batches, as under load.
  await Promise.all(
    contents.map((content) => {
      const event = messageEvent(content);
      return bus.js.publish(bus.subject(event.subject), JSON.stringify(event), { msgID: event.id });
    }),
  );
}

/** A session of the user, and what its replay buffer holds after READY. */
async function sessionOf(store: ReturnType<typeof platformOf>['store']) {
  const sessionId = randomUUID();
  await store.open({ sessionId, userId, authSid: randomUUID(), node: 'node-x' });
  await store.ready(sessionId, '{}');
  return async () => (await store.framesAfter(sessionId, 1)).map((f) => JSON.parse(f.frame).d.content as string);
}

async function readerOf(prefix: string, dispatcher: ReturnType<typeof platformOf>['dispatcher']) {
  const lease = createDispatchLease({ redis, prefix, ttlMs: 600 });
  const started = dispatchFromStreams({ bus, log, lease, ...dispatcher });
  await expect.poll(() => redis.exists(`${prefix}dispatch:pos:${bus.name(STREAMS.guilds.name)}`), { timeout: 10_000 }).toBe(1);
  return started;
}

/** Counts the deliveries in flight at once and the store's answers. */
function watch(store: ReturnType<typeof platformOf>['store']) {
  const seen = { most: 0, answers: [] as number[] };
  let now = 0;
  const deliver = store.deliver.bind(store);
  store.deliver = async (...args) => {
    seen.most = Math.max(seen.most, ++now);
    try {
      const answer = await deliver(...args);
      seen.answers.push(answer);
      return answer;
    } finally {
      now--;
    }
  };
  return seen;
}

const contents = (from: number, count: number) => Array.from({ length: count }, (_, i) => `message ${from + i}`);

describe('pipelined deliveries', () => {
  it('send a burst of a channel’s messages with many in flight, and every one lands once, in stream order', async () => {
    const prefix = `gwtest:${randomUUID()}:`;
    const { store, dispatcher } = platformOf(prefix);
    const framesOf = await sessionOf(store);
    const seen = watch(store);
    const reader = await readerOf(prefix, dispatcher);
    await publish(contents(0, 200));
    await expect.poll(framesOf, { timeout: 15_000 }).toHaveLength(200);
    expect(await framesOf()).toEqual(contents(0, 200));
    expect(seen.most).toBeGreaterThan(1);
    expect(seen.answers.filter((a) => a < 0)).toEqual([]);
    await reader.stop();
  });

  it('dispatch again, in their places, the deliveries sent behind one refused for a stale audience', async () => {
    const prefix = `gwtest:${randomUUID()}:`;
    const { store, audience, dispatcher } = platformOf(prefix);
    const framesOf = await sessionOf(store);
    const seen = watch(store);
    const reader = await readerOf(prefix, dispatcher);
    await publish(['warms the cached audience']);
    await expect.poll(framesOf, { timeout: 10_000 }).toHaveLength(1);
    // Another replica's change of who sees the channel: the cached list is refused at its next delivery.
    await audience.invalidate(GUILDS_SUBJECTS.overrideUpdated, { channelId, serverId });
    await publish(contents(0, 100));
    await expect.poll(framesOf, { timeout: 15_000 }).toHaveLength(101);
    expect((await framesOf()).slice(1)).toEqual(contents(0, 100));
    // The head was refused, the ones sent behind it too, and each was dispatched again in its place.
    expect(seen.answers).toContain(OUT_OF_ORDER);
    await reader.stop();
  });
});

describe('a delivery that names the one it follows', () => {
  it('is refused, numbering nothing, until that one landed; then it lands', async () => {
    const prefix = `gwtest:${randomUUID()}:`;
    const { store } = platformOf(prefix);
    const framesOf = await sessionOf(store);
    const [first, second] = [randomUUID(), randomUUID()];
    const deliver = (content: string, id: string, after?: string) =>
      store.deliver('MESSAGE_CREATE', JSON.stringify({ content }), { userIds: [userId], after }, id);
    expect(await deliver('second', second, first)).toBe(OUT_OF_ORDER);
    expect(await framesOf()).toEqual([]);
    expect(await deliver('first', first)).toBe(1);
    expect(await deliver('second', second, first)).toBe(1);
    expect(await deliver('second', second, first)).toBe(DUPLICATE);
    expect(await framesOf()).toEqual(['first', 'second']);
  });
});

describe('a member leaving a group', () => {
  /** A session of `user`, and the dispatches its replay buffer holds after READY. */
  async function dispatchesTo(store: ReturnType<typeof platformOf>['store'], user: string) {
    const sessionId = randomUUID();
    await store.open({ sessionId, userId: user, authSid: randomUUID(), node: 'node-x' });
    await store.ready(sessionId, '{}');
    return async () => (await store.framesAfter(sessionId, 1)).map((f) => JSON.parse(f.frame)).map(({ t, d }) => ({ t, d }));
  }
  const leftEvent = (data: { conversationId: string; userId: string; ownerId: string | null; participantIds: string[] }) => ({
    id: randomUUID(),
    subject: SOCIAL_SUBJECTS.conversationLeft,
    occurredAt: new Date().toISOString(),
    data,
  });

  it('tells those who remain and every session of the one who left, once, who left and who owns the group now', async () => {
    const { store, dispatcher } = platformOf(`gwtest:${randomUUID()}:`);
    const [owner, stayer, other, outsider] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
    const toStayer = await dispatchesTo(store, stayer);
    const toOther = await dispatchesTo(store, other);
    const [toOwner, toOwnersPhone] = [await dispatchesTo(store, owner), await dispatchesTo(store, owner)];
    const toOutsider = await dispatchesTo(store, outsider);
    const conversationId = randomUUID();
    // The owner leaves: the group goes on, owned by the one who joined first after them.
    const left = leftEvent({ conversationId, userId: owner, ownerId: stayer, participantIds: [stayer, other] });
    await dispatcher.dispatch(left);
    await dispatcher.dispatch(left);
    const removal = { t: 'DM_CONVERSATION_MEMBER_REMOVE', d: { conversationId, userId: owner, ownerId: stayer } };
    for (const dispatches of [toStayer, toOther, toOwner, toOwnersPhone]) expect(await dispatches()).toEqual([removal]);
    expect(await toOutsider()).toEqual([]);

    // The last one out, pipelined as the stream readers send: the group is gone, only they are told.
    const emptied = leftEvent({ conversationId, userId: stayer, ownerId: null, participantIds: [] });
    const sent = await dispatcher.send(emptied, {});
    expect(await sent?.outcome).toBe(1);
    expect(await toStayer()).toEqual([
      removal,
      { t: 'DM_CONVERSATION_MEMBER_REMOVE', d: { conversationId, userId: stayer, ownerId: null } },
    ]);
    expect(await toOther()).toEqual([removal]);
  });
});
