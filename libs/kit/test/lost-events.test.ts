import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createTestRuntime } from '@chat/testkit';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { type EventEnvelope, ensureConsumer, ensureStream, type StreamSpec } from '../src/bus.ts';
import { keepMarking, lostEvents, markProgress } from '../src/consumer-progress.ts';
import { many, type Queryable, withTx } from '../src/db.ts';
import { type ConsumerHandle, consumeEvents } from '../src/events.ts';
import { consumerLostEvents } from '../src/metrics.ts';
import { captureLogs } from './logs.ts';

// A read-model of an owner's values: versioned upserts, so an older event changes nothing.
const migrationsDir = await mkdtemp(join(tmpdir(), 'kit-backfill-'));
await writeFile(
  join(migrationsDir, '0001_values.sql'),
  'CREATE TABLE kept_values (stream text NOT NULL, key text NOT NULL, value int NOT NULL, version int NOT NULL, PRIMARY KEY (stream, key));',
);

const backing = inject('backing');
const runtime = await createTestRuntime({
  service: 'kitbackfill',
  migrationsDir,
  stream: { name: 'KITBF', subjects: ['kitbf.>'] },
  backing,
});
afterAll(() => runtime.close());
const logs = captureLogs('warn');

type Value = { key: string; value: number; version: number };

const keep = (tx: Queryable, stream: string, v: Value) =>
  tx.query(
    `INSERT INTO kept_values (stream, key, value, version) VALUES ($1, $2, $3, $4)
     ON CONFLICT (stream, key) DO UPDATE SET value = EXCLUDED.value, version = EXCLUDED.version WHERE kept_values.version <= EXCLUDED.version`,
    [stream, v.key, v.value, v.version],
  );
const kept = async (stream: string) =>
  Object.fromEntries(
    (await many<Value>(runtime.pool, 'SELECT key, value FROM kept_values WHERE stream = $1 ORDER BY key', [stream])).map((r) => [
      r.key,
      r.value,
    ]),
  );

let streams = 0;
/** A stream of its own per test: purging one must not touch another test's events. */
async function freshStream() {
  streams += 1;
  const spec: StreamSpec = { name: `KITBF${streams}`, subjects: [`kitbf${streams}.>`] };
  await ensureStream(runtime.bus, spec);
  const subject = `kitbf${streams}.value.set`;
  const publishTo = (to: string, v: Value) => {
    const event: EventEnvelope<Value> = { id: crypto.randomUUID(), subject: to, occurredAt: new Date().toISOString(), data: v };
    return runtime.bus.js.publish(runtime.bus.subject(to), JSON.stringify(event), { msgID: event.id });
  };
  const publish = (v: Value) => publishTo(subject, v);
  /** An event of the stream that a consumer filtered on `subject` never gets. */
  const publishElsewhere = (v: Value) => publishTo(`kitbf${streams}.other.set`, v);
  /** What a purge does: the stream keeps only the last `count` (a durable that does not exist yet finds the rest gone). */
  const dropAllBut = (count: number) => runtime.bus.jsm.streams.purge(runtime.bus.name(spec.name), { keep: count });
  /**
   * What the retention does to old events: every event now in the stream expires. Unlike a purge,
   * which moves the stream's consumers past what it removes, expiry leaves them where they were.
   */
  const expireAll = async () => {
    const name = runtime.bus.name(spec.name);
    const { config } = await runtime.bus.jsm.streams.info(name);
    const oneSecond = 1_000_000_000;
    await runtime.bus.jsm.streams.update(name, { ...config, max_age: oneSecond, duplicate_window: oneSecond });
    await expect.poll(async () => (await runtime.bus.jsm.streams.info(name)).state.messages, { timeout: 5_000 }).toBe(0);
    await runtime.bus.jsm.streams.update(name, config);
  };
  const durableInfo = (durable: string) => runtime.bus.jsm.consumers.info(runtime.bus.name(spec.name), runtime.bus.name(durable));
  const durableExists = (durable: string) =>
    durableInfo(durable).then(
      () => true,
      () => false,
    );
  /** Where the durable was made to start, and how many events it has delivered since. */
  const startOf = async (durable: string) => {
    const info = await durableInfo(durable);
    return { start: info.config.opt_start_seq, delivered: info.delivered.consumer_seq };
  };
  return { spec, subject, publish, publishElsewhere, dropAllBut, expireAll, durableExists, durableInfo, startOf };
}

/** A promise that resolves when `release` is called: holds a backfill or a handler for as long as a test needs. */
function gate() {
  let release = () => {};
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  return { held, release };
}

/**
 * A read-model consumer whose backfill copies `owner` (the owner's current values), counting its
 * runs; `options.backfill` runs first in each backfill, `options.beforeApply` before each event is applied.
 */
function readModel(
  stream: Awaited<ReturnType<typeof freshStream>>,
  durable: string,
  owner: Value[],
  options: { backfill?: (signal: AbortSignal) => Promise<void>; filter?: string; beforeApply?: () => Promise<void> } = {},
) {
  const runs = { backfills: 0 };
  const start = (): Promise<ConsumerHandle> =>
    consumeEvents({
      bus: runtime.bus,
      pool: runtime.pool,
      log: logs.log,
      spec: { stream: stream.spec.name, durable, filter: options.filter },
      handle: async (event, tx) => {
        await options.beforeApply?.();
        await keep(tx, stream.spec.name, event.data as Value);
      },
      backfill: async (signal) => {
        runs.backfills += 1;
        await options.backfill?.(signal);
        await withTx(runtime.pool, async (tx) => {
          for (const v of owner) await keep(tx, stream.spec.name, v);
        });
        return owner.length;
      },
    });
  return { runs, start };
}

/**
 * Starts the read-model and checks that it backfilled once into `kept`, that its durable was made to
 * start as `startOf` says, and that the `next` event published then is applied (`keptAfter`).
 */
async function expectBackfilledThenLive(
  stream: Awaited<ReturnType<typeof freshStream>>,
  model: ReturnType<typeof readModel>,
  durable: string,
  expected: { kept: Record<string, number>; startOf: { start: number; delivered: number }; next: Value; keptAfter: Record<string, number> },
): Promise<void> {
  const consumer = await model.start();
  try {
    await expect.poll(() => kept(stream.spec.name)).toEqual(expected.kept);
    expect(model.runs.backfills).toBe(1);
    expect(await stream.startOf(durable)).toEqual(expected.startOf);
    await stream.publish(expected.next);
    await expect.poll(() => kept(stream.spec.name)).toEqual(expected.keptAfter);
  } finally {
    await consumer.stop();
  }
}

/** Starts the read-model again (its value a = 1 kept) and checks that it applies the next event (c = 3) without a backfill. */
async function expectLiveWithoutBackfill(
  stream: Awaited<ReturnType<typeof freshStream>>,
  model: ReturnType<typeof readModel>,
): Promise<void> {
  const again = await model.start();
  try {
    await stream.publish({ key: 'c', value: 3, version: 1 });
    await expect.poll(() => kept(stream.spec.name)).toEqual({ a: 1, c: 3 });
    expect(model.runs.backfills).toBe(0);
  } finally {
    await again.stop();
  }
}

describe('a read-model consumer with a backfill', () => {
  it('replays the whole stream and backfills nothing while the stream still holds its first event', async () => {
    const stream = await freshStream();
    await stream.publish({ key: 'a', value: 1, version: 1 });
    await stream.publish({ key: 'b', value: 2, version: 1 });
    const model = readModel(stream, 'kit-bf-whole', [{ key: 'z', value: 9, version: 1 }]);
    const consumer = await model.start();
    try {
      await expect.poll(() => kept(stream.spec.name)).toEqual({ a: 1, b: 2 });
      expect(model.runs.backfills).toBe(0);
    } finally {
      await consumer.stop();
    }
  });

  it('backfills a new durable once the stream dropped its oldest events, then delivers what was published after the backfill began', async () => {
    const stream = await freshStream();
    await stream.publish({ key: 'c', value: 5, version: 1 });
    await stream.publish({ key: 'a', value: 1, version: 1 });
    await stream.publish({ key: 'a', value: 2, version: 2 });
    await stream.dropAllBut(1);
    // The owner's state: c has no event left in the stream, a's kept one is in what the owner answers.
    const owner = [
      { key: 'a', value: 2, version: 2 },
      { key: 'c', value: 5, version: 1 },
    ];
    let durableDuringBackfill: boolean | undefined;
    const model = readModel(stream, 'kit-bf-lost', owner, {
      backfill: async () => {
        durableDuringBackfill = await stream.durableExists('kit-bf-lost');
        // A change the owner commits while the backfill reads: its event comes after.
        await stream.publish({ key: 'b', value: 7, version: 1 });
      },
    });
    // It starts after the stream's last event from before the backfill (a = 2): that one is not applied again.
    await expectBackfilledThenLive(stream, model, 'kit-bf-lost', {
      kept: { a: 2, b: 7, c: 5 },
      startOf: { start: 4, delivered: 1 },
      next: { key: 'a', value: 4, version: 4 },
      keptAfter: { a: 4, b: 7, c: 5 },
    });
    expect(durableDuringBackfill).toBe(false);
  });

  it('backfills once when two replicas start together: the other waits, then finds the durable', async () => {
    const stream = await freshStream();
    await stream.publish({ key: 'a', value: 1, version: 1 });
    await stream.dropAllBut(0);
    const { held, release } = gate();
    const first = readModel(stream, 'kit-bf-pair', [{ key: 'a', value: 1, version: 1 }], { backfill: () => held });
    const second = readModel(stream, 'kit-bf-pair', [{ key: 'a', value: 1, version: 1 }]);
    const consumers = [await first.start()];
    try {
      await expect.poll(() => first.runs.backfills).toBe(1);
      consumers.push(await second.start());
      // The second one waits for the lock while the first one backfills.
      await new Promise((r) => setTimeout(r, 1_500));
      expect(await stream.durableExists('kit-bf-pair')).toBe(false);
      release();
      await expect.poll(() => stream.durableExists('kit-bf-pair')).toBe(true);
      await stream.publish({ key: 'b', value: 2, version: 1 });
      await expect.poll(() => kept(stream.spec.name)).toEqual({ a: 1, b: 2 });
      expect({ first: first.runs.backfills, second: second.runs.backfills }).toEqual({ first: 1, second: 0 });
    } finally {
      for (const consumer of consumers) await consumer.stop();
    }
  });

  it('is not taken for lost by a replica that starts while the durable made after the backfill holds an unacked event', async () => {
    const stream = await freshStream();
    await stream.publish({ key: 'a', value: 1, version: 1 });
    await stream.dropAllBut(0);
    const { held, release } = gate();
    const owner = [{ key: 'a', value: 1, version: 1 }];
    const first = readModel(stream, 'kit-bf-unacked', owner, { beforeApply: () => held });
    const second = readModel(stream, 'kit-bf-unacked', owner);
    const consumers = [await first.start()];
    try {
      await expect.poll(() => stream.durableExists('kit-bf-unacked')).toBe(true);
      await stream.publish({ key: 'b', value: 2, version: 1 });
      // Its ack floor is still 0, below the sequence the durable was made after.
      await expect.poll(async () => (await stream.durableInfo('kit-bf-unacked')).num_ack_pending).toBe(1);
      const made = (await stream.durableInfo('kit-bf-unacked')).created;
      consumers.push(await second.start());
      await new Promise((r) => setTimeout(r, 1_000));
      release();
      await expect.poll(() => kept(stream.spec.name)).toEqual({ a: 1, b: 2 });
      expect({ first: first.runs.backfills, second: second.runs.backfills }).toEqual({ first: 1, second: 0 });
      expect((await stream.durableInfo('kit-bf-unacked')).created).toBe(made);
    } finally {
      release();
      for (const consumer of consumers) await consumer.stop();
    }
  });

  it('creates no durable when the backfill fails, and runs it again on the next start attempt', async () => {
    const stream = await freshStream();
    await stream.publish({ key: 'a', value: 1, version: 1 });
    await stream.publish({ key: 'b', value: 1, version: 1 });
    await stream.dropAllBut(0);
    let failures = 1;
    const model = readModel(stream, 'kit-bf-retry', [{ key: 'a', value: 1, version: 1 }], {
      backfill: async () => {
        if (failures-- > 0) throw new Error('owner unreachable');
      },
    });
    const consumer = await model.start();
    try {
      await expect.poll(() => model.runs.backfills).toBe(1);
      expect(await stream.durableExists('kit-bf-retry')).toBe(false);
      expect(await kept(stream.spec.name)).toEqual({});
      await expect.poll(() => stream.durableExists('kit-bf-retry'), { timeout: 6_000 }).toBe(true);
      expect(model.runs.backfills).toBe(2);
      expect(await kept(stream.spec.name)).toEqual({ a: 1 });
    } finally {
      await consumer.stop();
    }
  });

  it('lets the service start without waiting for the backfill, and stopping aborts it before any durable exists', async () => {
    const stream = await freshStream();
    await stream.publish({ key: 'a', value: 1, version: 1 });
    await stream.dropAllBut(0);
    let aborted = false;
    const model = readModel(stream, 'kit-bf-long', [{ key: 'a', value: 1, version: 1 }], {
      backfill: (signal) => {
        // A backfill of a large owner: it ends only when stopped.
        return new Promise((_, reject) =>
          signal.addEventListener('abort', () => {
            aborted = true;
            reject(signal.reason);
          }),
        );
      },
    });
    const consumer = await model.start();
    await expect.poll(() => model.runs.backfills).toBe(1);
    await consumer.stop();
    expect(aborted).toBe(true);
    expect(await stream.durableExists('kit-bf-long')).toBe(false);
    // A stop, not a failure: nothing logged, nothing tried again.
    expect(logs.entries().filter((e) => e.what === 'consumer kit-bf-long')).toEqual([]);
    await new Promise((r) => setTimeout(r, 2_500));
    expect(model.runs.backfills).toBe(1);
    expect(await kept(stream.spec.name)).toEqual({});
  });

  it('backfills a durable that was away while the stream dropped events it had not read, and makes it again after the backfill', async () => {
    const stream = await freshStream();
    await stream.publish({ key: 'a', value: 1, version: 1 });
    const owner = [
      { key: 'a', value: 3, version: 3 },
      { key: 'b', value: 2, version: 1 },
    ];
    const model = readModel(stream, 'kit-bf-away', owner);
    const first = await model.start();
    await expect.poll(() => kept(stream.spec.name)).toEqual({ a: 1 });
    await first.stop();
    // While it is away: b is set and a twice; only a's last change is recent enough to be kept.
    await stream.publish({ key: 'b', value: 2, version: 1 });
    await stream.publish({ key: 'a', value: 2, version: 2 });
    await stream.expireAll();
    await stream.publish({ key: 'a', value: 3, version: 3 });
    // Made again after the stream's last event: a's kept event is in the backfill, not delivered again.
    await expectBackfilledThenLive(stream, model, 'kit-bf-away', {
      kept: { a: 3, b: 2 },
      startOf: { start: 5, delivered: 0 },
      next: { key: 'c', value: 4, version: 1 },
      keptAfter: { a: 3, b: 2, c: 4 },
    });
  });

  it('never backfills a durable that had read every event of its filter that the stream dropped since, however far back its last one lies', async () => {
    const stream = await freshStream();
    await stream.publish({ key: 'a', value: 1, version: 1 });
    const model = readModel(stream, 'kit-bf-known', [{ key: 'z', value: 9, version: 1 }], { filter: stream.subject });
    const first = await model.start();
    await expect.poll(() => kept(stream.spec.name)).toEqual({ a: 1 });
    // Other subjects' events go past the running consumer: its own position stays on a's.
    for (let i = 0; i < 3; i++) await stream.publishElsewhere({ key: 'x', value: i, version: i });
    await expect.poll(async () => (await stream.durableInfo('kit-bf-known')).num_pending).toBe(0);
    await first.stop();
    await stream.expireAll();
    await expectLiveWithoutBackfill(stream, model);
  });
});

/** The saved mark of how far the durable has read its stream. */
const markOf = async (durable: string, stream: string) =>
  (
    await many<{ readUpTo: number }>(
      runtime.pool,
      'SELECT read_up_to::int AS "readUpTo" FROM event_consumer_marks WHERE stream = $1 AND durable = $2',
      [runtime.bus.name(stream), runtime.bus.name(durable)],
    )
  )[0]?.readUpTo;

describe('the mark of how far a consumer has read', () => {
  it("moves to the stream's last event while the running consumer is caught up, as a start after a crash would need", async () => {
    const stream = await freshStream();
    const spec = { stream: stream.spec.name, durable: 'kit-mark-live', filter: stream.subject };
    const consumer = await consumeEvents({ bus: runtime.bus, pool: runtime.pool, log: logs.log, spec, handle: async () => {} });
    const marking = keepMarking(runtime.bus, runtime.pool, spec, logs.log, 50);
    const markNow = () => markOf(spec.durable, spec.stream);
    try {
      await stream.publish({ key: 'a', value: 1, version: 1 });
      for (let i = 0; i < 3; i++) await stream.publishElsewhere({ key: 'x', value: i, version: i });
      // The consumer's own position stays on a (1); the mark follows the stream.
      await expect.poll(markNow).toBe(4);
      expect((await stream.durableInfo('kit-mark-live')).delivered.stream_seq).toBe(1);
    } finally {
      await marking.stop();
      await consumer.stop();
    }
  });

  it('keeps following the stream while the filter stays quiet for longer than the stream keeps events', async () => {
    const stream = await freshStream();
    await stream.publish({ key: 'a', value: 1, version: 1 });
    const model = readModel(stream, 'kit-mark-quiet', [{ key: 'z', value: 9, version: 1 }], { filter: stream.subject });
    const consumer = await model.start();
    const marking = keepMarking(runtime.bus, runtime.pool, { stream: stream.spec.name, durable: 'kit-mark-quiet' }, logs.log, 50);
    const lastSequence = async () => (await runtime.bus.jsm.streams.info(runtime.bus.name(stream.spec.name))).state.last_seq;
    try {
      await expect.poll(() => kept(stream.spec.name)).toEqual({ a: 1 });
      // Twice: other subjects' events come and expire while a stays the filter's last event.
      for (let round = 0; round < 2; round++) {
        for (let i = 0; i < 3; i++) await stream.publishElsewhere({ key: 'x', value: i, version: i });
        const last = await lastSequence();
        await expect.poll(() => markOf('kit-mark-quiet', stream.spec.name)).toBe(last);
        await stream.expireAll();
      }
    } finally {
      await marking.stop();
      await consumer.stop();
    }
    await expectLiveWithoutBackfill(stream, model);
  });

  it('stops within about a second when its last mark cannot be saved', async () => {
    const stream = await freshStream();
    const spec = { stream: stream.spec.name, durable: 'kit-mark-stop', filter: stream.subject };
    await ensureConsumer(runtime.bus, spec);
    await markProgress(runtime.bus, runtime.pool, spec);
    const marking = keepMarking(runtime.bus, runtime.pool, spec, logs.log, 60_000);
    // Another transaction holds the mark's row: the stop's save waits on it.
    const holder = await runtime.pool.connect();
    await holder.query('BEGIN');
    await holder.query('SELECT 1 FROM event_consumer_marks WHERE stream = $1 AND durable = $2 FOR UPDATE', [
      runtime.bus.name(spec.stream),
      runtime.bus.name(spec.durable),
    ]);
    try {
      const started = performance.now();
      const stopped = marking.stop().then(() => performance.now() - started);
      // Without the cap the stop would wait for the row: it is let go after 5 s, so the test fails rather than hangs.
      await Promise.race([stopped, sleep(5_000)]);
      await holder.query('ROLLBACK');
      const took = await stopped;
      expect(took).toBeGreaterThanOrEqual(900);
      expect(took).toBeLessThan(3_000);
    } finally {
      holder.release();
    }
  });

  it('belongs to the durable it was taken of: one an operator made again starts without it', async () => {
    const stream = await freshStream();
    const spec = { stream: stream.spec.name, durable: 'kit-mark-remade', filter: stream.subject };
    await stream.publish({ key: 'a', value: 1, version: 1 });
    for (let i = 0; i < 3; i++) await stream.publishElsewhere({ key: 'x', value: i, version: i });
    const consumer = await consumeEvents({ bus: runtime.bus, pool: runtime.pool, log: logs.log, spec, handle: async () => {} });
    await expect.poll(async () => (await stream.durableInfo(spec.durable)).num_pending).toBe(0);
    await consumer.stop();
    // The stop waits at most a second for its last mark; on a busy machine the save lands after it.
    await expect.poll(() => markOf(spec.durable, spec.stream), { timeout: 5_000 }).toBe(4);
    // The operator deletes the durable and makes it again: it has read nothing of the stream.
    await runtime.bus.jsm.consumers.delete(runtime.bus.name(spec.stream), runtime.bus.name(spec.durable));
    await ensureConsumer(runtime.bus, spec);
    await markProgress(runtime.bus, runtime.pool, spec);
    expect(await markOf(spec.durable, spec.stream)).toBe(0);
    // So the events the stream drops now were never read by it, and are reported as lost.
    await stream.expireAll();
    expect(await lostEvents(runtime.bus, runtime.pool, spec)).toEqual({ durableExisted: true, from: 1, to: 4, lastSequence: 4 });
  });
});

describe('a consumer without a backfill', () => {
  const lostGauge = async (durable: string) => (await consumerLostEvents.get()).values.find((v) => v.labels.consumer === durable)?.value;

  it('reports the events the stream dropped before it read them, once, and goes on with the next ones', async () => {
    const stream = await freshStream();
    const applied: string[] = [];
    const start = () =>
      consumeEvents({
        bus: runtime.bus,
        pool: runtime.pool,
        log: logs.log,
        spec: { stream: stream.spec.name, durable: 'kit-lost-plain', filter: stream.subject },
        handle: async (event) => void applied.push((event.data as Value).key),
      });
    const reports = () => logs.entries().filter((e) => e.consumer === 'kit-lost-plain' && e.level === 50);
    await stream.publish({ key: 'a', value: 1, version: 1 });
    const first = await start();
    await expect.poll(() => applied).toEqual(['a']);
    await first.stop();
    await stream.publish({ key: 'b', value: 1, version: 1 });
    await stream.publish({ key: 'c', value: 1, version: 1 });
    // Other subjects' events that expire with them count too: the consumer cannot tell them apart.
    await stream.publishElsewhere({ key: 'x', value: 1, version: 1 });
    await stream.expireAll();
    const second = await start();
    expect(reports()).toMatchObject([{ from: 2, to: 4, msg: expect.stringContaining('dropped events this consumer had not read') }]);
    expect(await lostGauge('kit-lost-plain')).toBe(3);
    await second.stop();
    // Said once, though nothing of its filter arrived since: the next start finds nothing new lost, and goes on.
    const third = await start();
    try {
      await stream.publish({ key: 'd', value: 1, version: 1 });
      await expect.poll(() => applied).toEqual(['a', 'd']);
      expect(reports()).toHaveLength(1);
    } finally {
      await third.stop();
    }
    expect(await lostGauge('kit-lost-plain')).toBe(0);
  });

  it('takes nothing for lost on a durable made before marks were kept: what it read is not known', async () => {
    const stream = await freshStream();
    const spec = { stream: stream.spec.name, durable: 'kit-lost-unmarked', filter: stream.subject };
    await ensureConsumer(runtime.bus, spec);
    await stream.publish({ key: 'a', value: 1, version: 1 });
    await stream.expireAll();
    const applied: string[] = [];
    const consumer = await consumeEvents({
      bus: runtime.bus,
      pool: runtime.pool,
      log: logs.log,
      spec,
      handle: async (event) => void applied.push((event.data as Value).key),
    });
    try {
      await stream.publish({ key: 'b', value: 1, version: 1 });
      await expect.poll(() => applied).toEqual(['b']);
      expect(logs.entries().filter((e) => e.consumer === 'kit-lost-unmarked' && e.level === 50)).toEqual([]);
      expect(await lostGauge('kit-lost-unmarked')).toBe(0);
      // Its start marked it: from now on a loss would show.
      expect(await markOf('kit-lost-unmarked', stream.spec.name)).toBe(1);
    } finally {
      await consumer.stop();
    }
  });
});
