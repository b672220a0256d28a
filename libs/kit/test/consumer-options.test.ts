import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createTestRuntime } from '@chat/testkit';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { type EventEnvelope, requestHeaders } from '../src/bus.ts';
import { createPool, one, type Queryable } from '../src/db.ts';
import { consumeEvents } from '../src/events.ts';
import { captureLogs } from './logs.ts';

// The options of consumeEvents for events that are slow to apply and independent of one another:
// `prepare` (the slow part, outside any transaction) and `concurrency` (several events at once).
const STREAM = { name: 'KITOPTIONS', subjects: ['kitopt.>'] };
const migrationsDir = await mkdtemp(join(tmpdir(), 'kit-consumer-options-'));
await writeFile(join(migrationsDir, '0001_applied.sql'), 'CREATE TABLE applied (event_id uuid NOT NULL, data jsonb NOT NULL);');

const runtime = await createTestRuntime({ service: 'kitoptions', migrationsDir, stream: STREAM, backing: inject('backing') });
const streamName = runtime.bus.name(STREAM.name);
afterAll(() => runtime.close());

const logs = captureLogs('error');
const envelope = (subject: string, n: number): EventEnvelope => ({
  id: crypto.randomUUID(),
  subject,
  occurredAt: new Date().toISOString(),
  data: { n },
});
/** Publishes an event as the relay would; another `msgID` for the same event is a second delivery of it. */
const publish = async (event: EventEnvelope, msgID = event.id) =>
  (await runtime.bus.js.publish(runtime.bus.subject(event.subject), JSON.stringify(event), { msgID, headers: requestHeaders() })).seq;
const store = (tx: Queryable, event: EventEnvelope, data: unknown) =>
  tx.query('INSERT INTO applied (event_id, data) VALUES ($1, $2)', [event.id, data]);
const applied = async (event: EventEnvelope) =>
  (await one<{ n: number }>(runtime.pool, 'SELECT count(*)::int AS n FROM applied WHERE event_id = $1', [event.id])).n;
const consumerState = async (durable: string) => {
  const info = await runtime.bus.jsm.consumers.info(streamName, runtime.bus.name(durable));
  return { pending: info.num_pending, unacked: info.num_ack_pending, ackFloor: info.ack_floor.stream_seq };
};
const count = (counts: Map<string, number>, event: EventEnvelope) => counts.set(event.id, (counts.get(event.id) ?? 0) + 1);

/** A promise the test settles when it chooses: a site, or a lock, that answers only then. */
function gate() {
  let open = () => {};
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

describe('consumeEvents with concurrency', () => {
  it('applies events side by side: a slow one holds back none after it, each applies once, and is acked after its own commit', async () => {
    const durable = 'kit-side-by-side';
    const slowDone = gate();
    const handled = new Map<string, number>();
    const slow = envelope('kitopt.slots.created', 0);
    const fast = [1, 2, 3, 4, 5].map((n) => envelope('kitopt.slots.created', n));
    const consumer = await consumeEvents({
      bus: runtime.bus,
      pool: runtime.pool,
      log: logs.log,
      spec: { stream: STREAM.name, durable, filter: 'kitopt.slots.*' },
      concurrency: 3,
      handle: async (event, tx) => {
        count(handled, event);
        // Its transaction stays open, uncommitted, until the test lets it go.
        if (event.id === slow.id) await slowDone.opened;
        await store(tx, event, event.data);
      },
    });
    try {
      const slowSeq = await publish(slow);
      for (const event of fast) await publish(event);
      // Delivered twice, as after a crash: applied once.
      await publish(fast[1]!, `${fast[1]!.id}-again`);

      // Five events after the slow one went through the two slots it left free.
      for (const event of fast) await expect.poll(() => applied(event), { timeout: 3_000 }).toBe(1);
      // The slow one is not committed, so not acked: the durable's ack floor stays before it.
      expect(await applied(slow)).toBe(0);
      await expect.poll(() => consumerState(durable), { timeout: 3_000 }).toEqual({ pending: 0, unacked: 1, ackFloor: slowSeq - 1 });

      slowDone.open();
      await expect.poll(() => applied(slow), { timeout: 3_000 }).toBe(1);
      await expect.poll(async () => (await consumerState(durable)).unacked, { timeout: 3_000 }).toBe(0);
      for (const event of [slow, ...fast])
        expect({ applied: await applied(event), handled: handled.get(event.id) }).toEqual({ applied: 1, handled: 1 });
    } finally {
      slowDone.open();
      await consumer.stop();
    }
  });

  it('refuses batch together with prepare or concurrency, and a concurrency that maxAckPending never allows', async () => {
    const options = {
      bus: runtime.bus,
      pool: runtime.pool,
      log: logs.log,
      spec: { stream: STREAM.name, durable: 'kit-refused', filter: 'kitopt.refused.*' },
      handle: async () => {},
    };
    await expect(consumeEvents({ ...options, batch: 10, concurrency: 4 })).rejects.toThrow(
      'consumer kit-refused: batch cannot be combined with prepare or concurrency',
    );
    await expect(consumeEvents({ ...options, batch: 10, prepare: async () => 1 })).rejects.toThrow(/batch cannot be combined/);
    await expect(consumeEvents({ ...options, spec: { ...options.spec, maxAckPending: 1 }, concurrency: 4 })).rejects.toThrow(
      'consumer kit-refused: concurrency 4 can never be reached with maxAckPending 1',
    );
    await expect(consumeEvents({ ...options, concurrency: 0 })).rejects.toThrow(/concurrency must be a whole number from 1/);
  });
});

describe('consumeEvents with prepare', () => {
  it('prepares an event holding no database connection and hands what it answered to the handler, in the transaction that records it', async () => {
    // A pool of the consumer's own: nothing else takes its connections.
    const pool = createPool(runtime.databaseUrl, 3);
    const durable = 'kit-preparing';
    const held: number[] = [];
    const prepared = new Map<string, number>();
    const handled = new Map<string, number>();
    const failOnce = new Set<string>();
    const consumer = await consumeEvents({
      bus: runtime.bus,
      pool,
      log: logs.log,
      spec: { stream: STREAM.name, durable, filter: 'kitopt.prep.*' },
      prepare: async (event) => {
        count(prepared, event);
        // A slow site answering: sampled over a while.
        for (let i = 0; i < 5; i++) {
          held.push(pool.totalCount - pool.idleCount);
          await sleep(10);
        }
        if (failOnce.delete(event.id)) throw new Error('a site that failed this time');
        return { doubled: (event.data as { n: number }).n * 2 };
      },
      handle: async (event, tx, result) => {
        count(handled, event);
        await store(tx, event, result);
      },
    });
    try {
      const event = envelope('kitopt.prep.created', 21);
      const failing = envelope('kitopt.prep.created', 4);
      failOnce.add(failing.id);
      await publish(event);
      await publish(failing);
      await expect.poll(() => applied(event), { timeout: 3_000 }).toBe(1);
      const row = await one<{ data: unknown }>(runtime.pool, 'SELECT data FROM applied WHERE event_id = $1', [event.id]);
      expect(row.data).toEqual({ doubled: 42 });
      expect(held.length).toBeGreaterThan(0);
      expect(Math.max(...held)).toBe(0);

      // A failed prepare fails the event: redelivered (after a second), prepared again, applied once.
      await expect.poll(() => applied(failing), { timeout: 5_000 }).toBe(1);
      expect({ prepared: prepared.get(failing.id), handled: handled.get(failing.id) }).toEqual({ prepared: 2, handled: 1 });

      // Delivered again once applied: acked without preparing it again.
      await publish(event, `${event.id}-again`);
      await expect.poll(() => consumerState(durable), { timeout: 3_000 }).toMatchObject({ pending: 0, unacked: 0 });
      expect({ applied: await applied(event), prepared: prepared.get(event.id), handled: handled.get(event.id) }).toEqual({
        applied: 1,
        prepared: 1,
        handled: 1,
      });
    } finally {
      await consumer.stop();
      await pool.end();
    }
  });
});
