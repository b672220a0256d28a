import { randomUUID } from 'node:crypto';
import { MESSAGES_SUBJECTS, STREAMS } from '@chat/contracts';
import { type EventEnvelope, ensureConsumer } from '@chat/kit';
import { describe, expect, it } from 'vitest';
import { dispatchFromStreams } from '../src/bus/events.ts';
import { type EventSource, FencedOff } from '../src/domain/dispatch.ts';
import { createDispatchLease } from '../src/domain/dispatch-lease.ts';
import { createSessionStore, FENCED_OFF } from '../src/domain/session-store.ts';
import { dispatchLeaseHeld } from '../src/domain/socket-metrics.ts';
import { streamReaderBacking } from './helpers.ts';

/** The dispatch lease and the stream readers, on the real Redis and NATS. */

const { log, bus, redis } = await streamReaderBacking('gateway-dispatch-reader-test');

const TTL_MS = 600;
const newPrefix = () => `gwtest:${randomUUID()}:`;
const leaseOf = (prefix: string) => createDispatchLease({ redis, prefix, ttlMs: TTL_MS });

async function publish(content: string): Promise<string> {
  const event = { id: randomUUID(), subject: MESSAGES_SUBJECTS.messageCreated, occurredAt: new Date().toISOString(), data: { content } };
  await bus.js.publish(bus.subject(event.subject), JSON.stringify(event), { msgID: event.id });
  return event.id;
}

type Dispatch = (event: EventEnvelope, source: EventSource) => Promise<void>;

/** A reader, once it holds the lease and knows where to start: a stream never read starts at its last event. */
async function reader(prefix: string, dispatch: Dispatch) {
  const started = dispatchFromStreams({ bus, log, lease: leaseOf(prefix), dispatch });
  await startMarked(prefix);
  return started;
}

/** Some replica of `prefix` marked where the streams start. */
const startMarked = (prefix: string) =>
  expect.poll(() => redis.exists(`${prefix}dispatch:pos:${bus.name(STREAMS.guilds.name)}`), { timeout: 10_000 }).toBe(1);

/** A dispatcher that notes what it was given. */
function recorder() {
  const seen: string[] = [];
  const dispatch: Dispatch = async (event) => void seen.push(event.id);
  return { seen, dispatch };
}

describe('the dispatch lease', () => {
  it('is held by one tenure at a time, renewed and saved only by it, and free again once given up', async () => {
    const prefix = newPrefix();
    const [a, b] = [leaseOf(prefix), leaseOf(prefix)];
    const first = await a.acquire();
    expect(first).toBeDefined();
    expect(await b.acquire()).toBeUndefined();
    if (!first) return;
    expect(await a.renew(first)).toBe(true);
    expect(await a.savePosition(first, 'S', 7)).toBe(true);
    await a.release(first);
    const second = await b.acquire();
    expect(second).toBeDefined();
    if (!second) return;
    // The first tenure is over: it can neither renew, nor save, nor give up its successor's lease.
    expect(await a.renew(first)).toBe(false);
    expect(await a.savePosition(first, 'S', 9)).toBe(false);
    await a.release(first);
    expect(await b.renew(second)).toBe(true);
    expect(await b.position('S', { start: 3, latest: 100 })).toBe(7);
  });

  it('expires when its holder stops renewing it', async () => {
    const prefix = newPrefix();
    const [a, b] = [leaseOf(prefix), leaseOf(prefix)];
    expect(await a.acquire()).toBeDefined();
    await expect.poll(() => b.acquire(), { timeout: TTL_MS * 4, interval: 100 }).toBeDefined();
  });

  it('starts a stream never read where it is told, then at the saved position, and one made again since at its new last', async () => {
    const lease = leaseOf(newPrefix());
    expect(await lease.position('S', { start: 41, latest: 45 })).toBe(41);
    expect(await lease.position('S', { start: 50, latest: 50 })).toBe(41);
    // The stream was made again and holds fewer events than were read of the old one.
    expect(await lease.position('S', { start: 3, latest: 3 })).toBe(3);
  });
});

describe('the stream readers', () => {
  it('dispatch on one replica at a time, in order, and a stopped holder hands over where it left off', async () => {
    const prefix = newPrefix();
    const [a, b] = [recorder(), recorder()];
    const first = await reader(prefix, a.dispatch);
    const second = await reader(prefix, b.dispatch);
    const before = [];
    for (let i = 0; i < 20; i++) before.push(await publish(`before ${i}`));
    await expect.poll(() => a.seen.length + b.seen.length, { timeout: 10_000 }).toBe(20);
    const [holder, standby, holding, waiting] = a.seen.length ? [a, b, first, second] : [b, a, second, first];
    expect(holder.seen).toEqual(before);
    expect(standby.seen).toEqual([]);
    expect((await dispatchLeaseHeld.get()).values[0]?.value).toBe(1);

    await holding.stop();
    const after = [];
    for (let i = 0; i < 20; i++) after.push(await publish(`after ${i}`));
    await expect.poll(() => standby.seen.length, { timeout: 10_000 }).toBe(20);
    expect(standby.seen).toEqual(after);
    expect(holder.seen).toEqual(before);
    await waiting.stop();
    expect((await dispatchLeaseHeld.get()).values[0]?.value).toBe(0);
  });

  it('stops when stopped while it asks for the lease, and leaves the lease free', async () => {
    const prefix = newPrefix();
    const lease = leaseOf(prefix);
    const acquire = lease.acquire.bind(lease);
    let answer = () => {};
    const asked = new Promise<void>((resolve) => {
      lease.acquire = () => {
        resolve();
        return new Promise((granted) => {
          answer = () => granted(acquire());
        });
      };
    });
    const started = dispatchFromStreams({ bus, log, lease, dispatch: recorder().dispatch });
    await asked;
    const stopping = started.stop();
    answer();
    await stopping;
    expect(await redis.exists(`${prefix}dispatch:lease`)).toBe(0);
    expect((await dispatchLeaseHeld.get()).values[0]?.value).toBe(0);
  });

  it('reads what was published after a replica started, though another replica held the lease then', async () => {
    const prefix = newPrefix();
    await redis.set(`${prefix}dispatch:lease`, 'another replica', 'PX', 1_000);
    const { seen, dispatch } = recorder();
    const standby = dispatchFromStreams({ bus, log, lease: leaseOf(prefix), dispatch });
    await startMarked(prefix);
    // The holder dies before it reads this event; the standby's mark keeps it.
    const id = await publish('while standing by');
    await expect.poll(() => seen, { timeout: 10_000 }).toEqual([id]);
    await standby.stop();
  });

  it('takes over from the consumer the replicas shared before, after what it acknowledged, and removes it', async () => {
    const prefix = newPrefix();
    const stream = bus.name(STREAMS.guilds.name);
    const durable = bus.name('gateway-fanout');
    await ensureConsumer(bus, {
      stream: STREAMS.guilds.name,
      durable: 'gateway-fanout',
      deliverNewOnly: true,
      maxAckPending: 1,
      ackWaitSeconds: 5,
    });
    const ids = [];
    for (const content of ['acknowledged', 'pending one', 'pending two']) ids.push(await publish(content));
    const acknowledged = await (await bus.js.consumers.get(stream, durable)).next({ expires: 5_000 });
    expect(acknowledged && JSON.parse(new TextDecoder().decode(acknowledged.data)).id).toBe(ids[0]);
    await acknowledged?.ackAck();

    const { seen, dispatch } = recorder();
    const holder = await reader(prefix, dispatch);
    await expect.poll(() => seen, { timeout: 10_000 }).toEqual(ids.slice(1));
    await expect
      .poll(
        () =>
          bus.jsm.consumers.info(stream, durable).then(
            () => 'still there',
            () => 'gone',
          ),
        { timeout: 10_000 },
      )
      .toBe('gone');
    await holder.stop();
  });

  it('gives the lease up when a delivery is fenced off, and the next tenure dispatches that event, in order', async () => {
    const prefix = newPrefix();
    const delivered: { content: string; token: string }[] = [];
    let refused = false;
    const holder = await reader(prefix, async (event, { fence }) => {
      const content = (event.data as { content: string }).content;
      if (content === 'second' && !refused) {
        refused = true;
        throw new FencedOff();
      }
      delivered.push({ content, token: fence?.[1] ?? '' });
    });
    for (const content of ['first', 'second', 'third']) await publish(content);
    await expect.poll(() => delivered.length, { timeout: 10_000 }).toBe(3);
    expect(delivered.map((d) => d.content)).toEqual(['first', 'second', 'third']);
    const [first, second] = delivered;
    expect(second?.token).not.toBe(first?.token);
    await holder.stop();
  });

  it('lets nothing of a holder land once another tenure holds the lease, and its successor delivers it', async () => {
    const prefix = newPrefix();
    const store = createSessionStore({ redis, prefix, resumeWindowMs: 120_000, livenessMs: 60_000, bufferSize: 100 });
    const user = { sessionId: randomUUID(), userId: randomUUID(), authSid: randomUUID(), node: 'node-x' };
    await store.open({ ...user });
    await store.ready(user.sessionId, '{}');
    const contents = async () => (await store.framesAfter(user.sessionId, 1)).map((f) => JSON.parse(f.frame).d.content);
    const holder = await reader(prefix, async (event, { fence }) => {
      const outcome = await store.deliver('MESSAGE_CREATE', JSON.stringify(event.data), { userIds: [user.userId], fence }, event.id);
      if (outcome === FENCED_OFF) throw new FencedOff();
    });
    await publish('first');
    await expect.poll(contents, { timeout: 10_000 }).toEqual(['first']);

    // Another tenure took the lease (as if this holder paused past it).
    await redis.set(`${prefix}dispatch:lease`, 'intruder', 'PX', 60_000);
    await publish('second');
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await contents()).toEqual(['first']);

    // Once the intruder's lease lapses, the next tenure starts after the saved position.
    await redis.del(`${prefix}dispatch:lease`);
    await publish('third');
    await expect.poll(contents, { timeout: 10_000 }).toEqual(['first', 'second', 'third']);
    await holder.stop();
  });
});
