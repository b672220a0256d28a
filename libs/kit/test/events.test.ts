import { AsyncResource } from 'node:async_hooks';
import { Buffer } from 'node:buffer';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestDatabase, createTestRuntime, type TestDatabase } from '@chat/testkit';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import {
  connectBus,
  DEFAULT_EVENT_RETENTION_MS,
  daysToMs,
  type EventEnvelope,
  ensureStream,
  longestRetentionMs,
  requestHeaders,
} from '../src/bus.ts';
import { createPool, exec, many, markEventsWritten, one, type Pool, type Queryable, withRequestTx, withTx } from '../src/db.ts';
import {
  applyOnce,
  type ConsumerHandle,
  consumeEvents,
  enqueueEvent,
  type OutboxRow,
  outboxRow,
  purgeProcessedEvents,
  type Relay,
  startOutboxRelay,
} from '../src/events.ts';
import { migrate } from '../src/migrate.ts';
import { captureLogs } from './logs.ts';

const STREAM = { name: 'KITTEST', subjects: ['kit.>'] };
const migrationsDir = await mkdtemp(join(tmpdir(), 'kit-events-'));
await writeFile(
  join(migrationsDir, '0001_applied.sql'),
  'CREATE TABLE applied (consumer text NOT NULL, event_id uuid NOT NULL, data jsonb NOT NULL);',
);

const backing = inject('backing');
const runtime = await createTestRuntime({ service: 'kitevents', migrationsDir, stream: STREAM, backing });
const streamName = runtime.bus.name(STREAM.name);
afterAll(() => runtime.close());

interface Stored {
  msgId: string | undefined;
  requestId: string | undefined;
  subject: string;
  event: EventEnvelope<{ n?: number }>;
}

/** Every message the stream holds, in stream order. */
async function stored(): Promise<Stored[]> {
  const { state } = await runtime.bus.jsm.streams.info(streamName);
  const out: Stored[] = [];
  for (let seq = state.first_seq; state.messages > 0 && seq <= state.last_seq; seq++) {
    const m = await runtime.bus.jsm.streams.getMessage(streamName, { seq });
    if (!m) continue;
    out.push({
      msgId: m.header.get('Nats-Msg-Id'),
      requestId: m.header.get('x-request-id') || undefined,
      subject: m.subject,
      event: m.json(),
    });
  }
  return out;
}

const storedIds = async () => (await stored()).map((s) => s.msgId);

async function commitEvent(subject: string, data: unknown, requestId?: string): Promise<string> {
  return withTx(runtime.pool, (tx) => enqueueEvent(tx, subject, data, requestId));
}

describe('outbox and relay', () => {
  it('publishes an event of a committed transaction with its id as Nats-Msg-Id and the request id', async () => {
    const id = await commitEvent('kit.widget.created', { n: 1 }, 'req-outbox-1');
    await runtime.relay.flush();
    const message = (await stored()).find((s) => s.msgId === id);
    expect(message).toMatchObject({
      requestId: 'req-outbox-1',
      subject: runtime.bus.subject('kit.widget.created'),
      event: { id, subject: 'kit.widget.created', data: { n: 1 }, occurredAt: expect.any(String) },
    });
    expect(await one(runtime.pool, 'SELECT sent_at IS NOT NULL AS sent FROM outbox WHERE id = $1', [id])).toEqual({ sent: true });
  });

  it('never publishes the event of a rolled-back transaction', async () => {
    let id = '';
    await expect(
      withTx(runtime.pool, async (tx) => {
        id = await enqueueEvent(tx, 'kit.widget.created', { n: 2 });
        throw new Error('change refused');
      }),
    ).rejects.toThrow('change refused');
    await runtime.relay.flush();
    expect(await storedIds()).not.toContain(id);
    expect(await many(runtime.pool, 'SELECT 1 FROM outbox WHERE id = $1', [id])).toEqual([]);
  });

  it('lets the stream drop a republished event (a relay that crashed before marking it sent)', async () => {
    const id = await commitEvent('kit.widget.created', { n: 3 });
    await runtime.relay.flush();
    const before = (await stored()).length;
    await exec(runtime.pool, 'UPDATE outbox SET sent_at = NULL WHERE id = $1', [id]);
    await runtime.relay.flush();
    expect((await stored()).length).toBe(before);
    expect((await storedIds()).filter((m) => m === id)).toHaveLength(1);
    expect(await one(runtime.pool, 'SELECT sent_at IS NOT NULL AS sent FROM outbox WHERE id = $1', [id])).toEqual({ sent: true });
  });

  it('publishes in commit order', async () => {
    const early = await runtime.pool.connect();
    try {
      await early.query('BEGIN');
      const begunFirst = await enqueueEvent(early, 'kit.widget.created', { n: 4 });
      const committedFirst = await commitEvent('kit.widget.created', { n: 5 });
      await runtime.relay.flush();
      await early.query('COMMIT');
      await runtime.relay.flush();
      const ids = await storedIds();
      expect(ids.indexOf(committedFirst)).toBeLessThan(ids.indexOf(begunFirst));
    } finally {
      early.release();
    }
    const sequence: string[] = [];
    for (let n = 0; n < 30; n++) sequence.push(await commitEvent('kit.widget.updated', { n }));
    await runtime.relay.flush();
    expect((await storedIds()).filter((id) => id && sequence.includes(id))).toEqual(sequence);
  });

  it('has published every event committed before flush() when flush() resolves', async () => {
    for (let n = 0; n < 40; n++) {
      const id = await commitEvent('kit.widget.flushed', { n });
      await runtime.relay.flush();
      const last = (await stored()).at(-1);
      expect(last?.msgId).toBe(id);
    }
  });

  it('marks nothing sent while it cannot publish, and publishes once it can', async () => {
    await runtime.bus.jsm.streams.delete(streamName);
    try {
      const id = await commitEvent('kit.widget.created', { n: 6 });
      await expect(runtime.relay.flush()).rejects.toThrow();
      expect(await one(runtime.pool, 'SELECT sent_at FROM outbox WHERE id = $1', [id])).toEqual({ sent_at: null });
      await ensureStream(runtime.bus, STREAM);
      await runtime.relay.flush();
      expect(await storedIds()).toEqual([id]);
      expect(await one(runtime.pool, 'SELECT sent_at IS NOT NULL AS sent FROM outbox WHERE id = $1', [id])).toEqual({ sent: true });
    } finally {
      await ensureStream(runtime.bus, STREAM);
    }
  });
});

describe('relay retention', () => {
  // Polls and purges all the time, keeps published events for 10 s; nothing else writes to its database.
  const fixture = relayFixture(20, { retentionMs: 10_000, purgeEveryMs: 20 });
  const sentFlags = async () =>
    (await many<{ id: string; sent: boolean }>(fixture.pool, 'SELECT id, sent_at IS NOT NULL AS sent FROM outbox ORDER BY seq')).map(
      (r) => [r.id, r.sent],
    );

  it('deletes by itself the events published longer ago than the retention, and keeps the recent ones however old', async () => {
    const old = await withTx(fixture.pool, (tx) => enqueueEvent(tx, 'kit.retained.created', { n: 1 }));
    await fixture.relay.flush();
    // Written an hour ago and published only now (the bus was down): kept, as it was just sent.
    const late = crypto.randomUUID();
    await exec(
      fixture.pool,
      "INSERT INTO outbox (id, subject, payload, created_at) VALUES ($1, 'kit.retained.created', '{}', now() - interval '1 hour')",
      [late],
    );
    const recent = await withTx(fixture.pool, (tx) => enqueueEvent(tx, 'kit.retained.created', { n: 2 }));
    await fixture.relay.flush();
    await exec(fixture.pool, "UPDATE outbox SET sent_at = now() - interval '20 seconds' WHERE id = $1", [old]);

    await expect.poll(sentFlags, { timeout: 5_000 }).toEqual([
      [late, true],
      [recent, true],
    ]);
    expect(await storedIds()).toContain(old);
  });
});

describe('event retention', () => {
  const nanosOf = (ms: number) => ms * 1e6;
  const streamInfo = (logical: string) => runtime.bus.jsm.streams.info(runtime.bus.name(logical));
  /** A stream an operator made (NACK's in deploy/k8s) with a retention of its own. */
  const operatorStream = (logical: string, days: number) =>
    runtime.bus.jsm.streams.add({
      name: runtime.bus.name(logical),
      subjects: [runtime.bus.subject(`${logical.toLowerCase()}.>`)],
      max_age: nanosOf(daysToMs(days)),
    });
  /** The warning a bus logs, once, for a stream whose retention is not the bus's. */
  const retentionWarning = (logical: string, streamRetentionMs: number, says: string) =>
    expect.objectContaining({ stream: runtime.bus.name(logical), streamRetentionMs, msg: expect.stringContaining(says) });
  /** Another process's bus in the tests' namespace, logging into `logs`. */
  const otherBus = (name: string, logs: ReturnType<typeof captureLogs>, retentionMs?: number) =>
    connectBus({ url: backing.natsUrl, namespace: runtime.namespace, name, log: logs.log, retentionMs });

  it('creates a stream with the bus’s retention, and gives it to a stream that had none, keeping what it holds', async () => {
    await ensureStream(runtime.bus, { name: 'KITKEPT', subjects: ['kitkept.>'] });
    expect((await streamInfo('KITKEPT')).config.max_age).toBe(nanosOf(DEFAULT_EVENT_RETENTION_MS));

    // As a stream created before there was a retention: it keeps everything.
    await runtime.bus.jsm.streams.add({ name: runtime.bus.name('KITOLD'), subjects: [runtime.bus.subject('kitold.>')] });
    await runtime.bus.js.publish(runtime.bus.subject('kitold.thing.created'), '{}');
    expect((await streamInfo('KITOLD')).config.max_age).toBe(0);
    await ensureStream(runtime.bus, { name: 'KITOLD', subjects: ['kitold.>'] });
    const updated = await streamInfo('KITOLD');
    expect(updated.config.max_age).toBe(nanosOf(DEFAULT_EVENT_RETENTION_MS));
    expect(updated.config.subjects).toEqual([runtime.bus.subject('kitold.>')]);
    expect(updated.state.messages).toBe(1);
  });

  it('creates a stream with the retention of a bus configured with another one, and leaves one that has its own', async () => {
    const weekly = { name: 'KITWEEKLY', subjects: ['kitweekly.>'] };
    await ensureStream(runtime.bus, weekly);
    const dailyLogs = captureLogs('warn');
    const daily = await otherBus('kit-retention', dailyLogs, daysToMs(1));
    try {
      await ensureStream(daily, { name: 'KITDAILY', subjects: ['kitdaily.>'] });
      expect((await streamInfo('KITDAILY')).config.max_age).toBe(nanosOf(daysToMs(1)));
      expect(longestRetentionMs(daily)).toBe(daysToMs(1));
      await ensureStream(daily, weekly);
      await ensureStream(daily, weekly);
      expect((await streamInfo('KITWEEKLY')).config.max_age).toBe(nanosOf(DEFAULT_EVENT_RETENTION_MS));
      // Records of applied events last as long as the longest-keeping stream found, and the mismatch is told once.
      expect(longestRetentionMs(daily)).toBe(DEFAULT_EVENT_RETENTION_MS);
      expect(dailyLogs.entries().filter((e) => e.stream === runtime.bus.name('KITWEEKLY'))).toEqual([
        retentionWarning('KITWEEKLY', DEFAULT_EVENT_RETENTION_MS, 'keeps events longer than EVENT_RETENTION_DAYS'),
      ]);
    } finally {
      await daily.close();
    }
  });

  it('says when a stream it finds keeps events for less than the bus’s retention, and keeps records for the bus’s', async () => {
    await operatorStream('KITSHORT', 1);
    const logs = captureLogs('warn');
    const weekly = await otherBus('kit-retention-weekly', logs);
    try {
      await ensureStream(weekly, { name: 'KITSHORT', subjects: ['kitshort.>'] });
      expect((await streamInfo('KITSHORT')).config.max_age).toBe(nanosOf(daysToMs(1)));
      expect(longestRetentionMs(weekly)).toBe(DEFAULT_EVENT_RETENTION_MS);
      expect(logs.entries()).toEqual([retentionWarning('KITSHORT', daysToMs(1), 'for less than EVENT_RETENTION_DAYS')]);
    } finally {
      await weekly.close();
    }
  });

  it('keeps records as long as a stream it only consumes keeps events', async () => {
    // Another service's stream, kept a fortnight.
    await operatorStream('KITLONG', 14);
    const logs = captureLogs('warn');
    const bus = await otherBus('kit-retention-consumer', logs);
    const consumer = await consumeEvents({
      bus,
      pool: runtime.pool,
      log: logs.log,
      spec: { stream: 'KITLONG', durable: 'kit-long-reader' },
      handle: async () => {},
    });
    try {
      expect(longestRetentionMs(bus)).toBe(daysToMs(14));
      expect(logs.entries()).toEqual([retentionWarning('KITLONG', daysToMs(14), 'keeps events longer than EVENT_RETENTION_DAYS')]);
    } finally {
      await consumer.stop();
      await bus.close();
    }
  });

  it('deletes the records of events applied longer ago than the retention, and keeps the newer ones', async () => {
    const [old1, old2, fresh] = [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()];
    await exec(
      runtime.pool,
      `INSERT INTO processed_events (consumer, event_id, processed_at) VALUES
         ('kit-purge', $1, now() - interval '8 days'), ('kit-purge', $2, now() - interval '7 days 1 minute'),
         ('kit-purge', $3, now() - interval '6 days 23 hours')`,
      [old1, old2, fresh],
    );
    expect(await purgeProcessedEvents(runtime.pool, daysToMs(7))).toBe(2);
    const left = await many<{ event_id: string }>(runtime.pool, "SELECT event_id FROM processed_events WHERE consumer = 'kit-purge'");
    expect(left.map((r) => r.event_id)).toEqual([fresh]);
  });
});

/** A database of its own with one relay, so that only that relay publishes its events. */
function relayFixture(pollMs: number, retention: { retentionMs?: number; purgeEveryMs?: number } = {}) {
  const fixture = { pool: undefined as unknown as Pool, relay: undefined as unknown as Relay };
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase(backing.postgresUrl, 'kitrelay');
    fixture.pool = createPool(db.url, 4);
    await migrate(fixture.pool, migrationsDir);
    fixture.relay = startOutboxRelay({ pool: fixture.pool, bus: runtime.bus, log: captureLogs('warn').log, pollMs, ...retention });
  });
  afterAll(async () => {
    await fixture.relay.stop();
    await fixture.pool.end();
    await db.drop();
  });
  return fixture;
}

describe('relay flush', () => {
  // A relay that polls all the time, so flush() always races with its own loop.
  const fixture = relayFixture(1);

  it('has published every committed event when flush() resolves, even while the loop is publishing', async () => {
    for (let n = 0; n < 50; n++) {
      const id = await withTx(fixture.pool, (tx) => enqueueEvent(tx, 'kit.relay.flushed', { n }));
      await fixture.relay.flush();
      expect((await stored()).at(-1)?.msgId).toBe(id);
    }
  });
});

// A service's one-statement write (guilds' post_channel_message) inserts the outboxRow itself; left
// unannounced (no markEventsWritten), it is what another replica's commit looks like to this relay.
const insertRow = (db: Queryable, row: OutboxRow) =>
  exec(db, 'INSERT INTO outbox (id, subject, payload, headers) VALUES ($1, $2, $3, $4)', [row.id, row.subject, row.payload, row.headers]);

describe('relay poll', () => {
  const fixture = relayFixture(20);

  it('asks one statement a poll while nothing waits: no transaction is opened', async () => {
    await fixture.relay.flush();
    const connect = vi.spyOn(fixture.pool, 'connect');
    const query = vi.spyOn(fixture.pool, 'query');
    try {
      await expect.poll(() => query.mock.calls.length).toBeGreaterThanOrEqual(5);
      // pool.query takes its connection with a callback; a transaction (withTx) takes one with none.
      expect(connect.mock.calls.filter((args: unknown[]) => args.length === 0)).toHaveLength(0);
    } finally {
      connect.mockRestore();
      query.mockRestore();
    }
  });

  it('publishes at a poll what another replica committed, nothing having woken it', async () => {
    const row = outboxRow('kit.relay.polled', { n: 1 });
    await insertRow(fixture.pool, row);
    await expect.poll(async () => (await storedIds()).includes(row.id), { timeout: 3_000 }).toBe(true);
  });
});

describe('relay wake-up on commit', () => {
  // A relay that only polls once a minute: anything published sooner was woken by its commit.
  const fixture = relayFixture(60_000);
  const commit = (n: number) => withTx(fixture.pool, (tx) => enqueueEvent(tx, 'kit.relay.woken', { n }));
  const published = async (ids: string[]) => {
    const have = new Set(await storedIds());
    return ids.every((id) => have.has(id));
  };

  it('publishes soon after commit without waiting for the poll', async () => {
    const id = await commit(1);
    await expect.poll(() => published([id]), { timeout: 3_000 }).toBe(true);
  });

  it('does not lose a commit that lands while it is publishing', async () => {
    const ids = await Promise.all(Array.from({ length: 30 }, (_, n) => commit(n)));
    await expect.poll(() => published(ids), { timeout: 3_000 }).toBe(true);
    const late = await commit(99);
    await expect.poll(() => published([late]), { timeout: 3_000 }).toBe(true);
  });

  it('is woken by an autocommit write too', async () => {
    const id = await enqueueEvent(fixture.pool, 'kit.relay.woken', { n: 3 });
    await expect.poll(() => published([id]), { timeout: 3_000 }).toBe(true);
  });

  it('is woken by a statement that wrote an outboxRow itself, and publishes the row as enqueueEvent would', async () => {
    const row = outboxRow('kit.relay.woken', { n: 4 }, 'req-4');
    expect(row.payload).toEqual({ id: row.id, subject: 'kit.relay.woken', occurredAt: expect.any(String), data: { n: 4 } });
    await insertRow(fixture.pool, row);
    markEventsWritten(fixture.pool);
    await expect.poll(() => published([row.id]), { timeout: 3_000 }).toBe(true);
    const [sent] = (await stored()).filter((s) => s.msgId === row.id);
    expect(sent).toEqual({ msgId: row.id, requestId: 'req-4', subject: runtime.bus.subject('kit.relay.woken'), event: row.payload });
  });

  it('inside a request’s transaction, is woken when that transaction commits', async () => {
    const row = outboxRow('kit.relay.woken', { n: 5 });
    // A drain run from outside the request (inside, it would join the request's transaction).
    const drainOutside = AsyncResource.bind(() => fixture.relay.flush());
    await withRequestTx(fixture.pool, async () => {
      // On the pool: the helpers and markEventsWritten join the request's transaction.
      await insertRow(fixture.pool, row);
      markEventsWritten(fixture.pool);
      // Woken now, the relay would find nothing committed and sleep until its next poll (a minute).
      await drainOutside();
    });
    await expect.poll(() => published([row.id]), { timeout: 3_000 }).toBe(true);
  });
});

describe('consumeEvents and applyOnce', () => {
  const logs = captureLogs('error');
  const calls = new Map<string, number>();
  const failOnce = new Set<string>();
  const handle = async (event: EventEnvelope, tx: Queryable) => {
    calls.set(event.id, (calls.get(event.id) ?? 0) + 1);
    if (failOnce.delete(event.id)) throw new Error('transient failure');
    await tx.query('INSERT INTO applied (consumer, event_id, data) VALUES ($1, $2, $3)', ['kit-applier', event.id, event.data]);
  };
  const appliedCount = async (id: string) =>
    (await one<{ n: number }>(runtime.pool, 'SELECT count(*)::int AS n FROM applied WHERE event_id = $1', [id])).n;
  const consumerState = async (durable: string) => {
    const info = await runtime.bus.jsm.consumers.info(streamName, runtime.bus.name(durable));
    return { pending: info.num_pending, unacked: info.num_ack_pending };
  };
  const publishRaw = (envelope: EventEnvelope, msgID: string) =>
    runtime.bus.js.publish(runtime.bus.subject(envelope.subject), JSON.stringify(envelope), { msgID, headers: requestHeaders() });
  const envelope = (n: number): EventEnvelope => ({
    id: crypto.randomUUID(),
    subject: 'kit.consumed.created',
    occurredAt: new Date().toISOString(),
    data: { n },
  });

  const spec = { stream: STREAM.name, durable: 'kit-applier', filter: 'kit.consumed.*' };
  let consumer: ConsumerHandle;
  beforeAll(async () => {
    consumer = await consumeEvents({ bus: runtime.bus, pool: runtime.pool, log: logs.log, spec, handle });
  });
  afterAll(() => consumer.stop());

  it('applies an outbox event once and acks it', async () => {
    const id = await commitEvent('kit.consumed.created', { n: 1 });
    await runtime.relay.flush();
    await expect.poll(() => appliedCount(id)).toBe(1);
    await expect.poll(() => consumerState('kit-applier')).toEqual({ pending: 0, unacked: 0 });
  });

  it('applies an event once even when it is delivered twice', async () => {
    const event = envelope(2);
    await publishRaw(event, `${event.id}-first`);
    await publishRaw(event, `${event.id}-again`);
    await expect.poll(() => consumerState('kit-applier')).toEqual({ pending: 0, unacked: 0 });
    expect(await appliedCount(event.id)).toBe(1);
    expect(calls.get(event.id)).toBe(1);
  });

  it('redelivers the event of a handler that threw, and applies it once it succeeds', async () => {
    const event = envelope(3);
    failOnce.add(event.id);
    await publishRaw(event, event.id);
    await expect.poll(() => appliedCount(event.id), { timeout: 5_000 }).toBe(1);
    expect(calls.get(event.id)).toBe(2);
    expect(logs.entries().some((e) => e.eventId === event.id && e.msg === 'event handler failed; will be redelivered')).toBe(true);
  });

  it('survives a message that is not an event and goes on with the next', async () => {
    await runtime.bus.js.publish(runtime.bus.subject('kit.consumed.garbage'), 'not json at all');
    const event = envelope(4);
    await publishRaw(event, event.id);
    await expect.poll(() => appliedCount(event.id), { timeout: 5_000 }).toBe(1);
  });

  it('does not apply twice an event committed by a consumer that crashed before acking', async () => {
    const durable = 'kit-crasher';
    await runtime.bus.jsm.consumers.add(streamName, {
      durable_name: runtime.bus.name(durable),
      ack_policy: 'explicit' as never,
      ack_wait: 1e9,
      filter_subject: runtime.bus.subject('kit.crash.*'),
    });
    const event = { ...envelope(5), subject: 'kit.crash.created' };
    await publishRaw(event, event.id);

    const crashed = await runtime.bus.js.consumers.get(streamName, runtime.bus.name(durable));
    const delivered = await crashed.next({ expires: 5_000 });
    expect(delivered?.json<EventEnvelope>().id).toBe(event.id);
    expect(await applyOnce(runtime.pool, durable, event, handle)).toBe(true);
    // ...and the process dies here: no ack.

    const restarted = await consumeEvents({
      bus: runtime.bus,
      pool: runtime.pool,
      log: logs.log,
      spec: { stream: STREAM.name, durable, filter: 'kit.crash.*' },
      handle,
    });
    try {
      await expect.poll(() => consumerState(durable), { timeout: 5_000 }).toEqual({ pending: 0, unacked: 0 });
      expect(await appliedCount(event.id)).toBe(1);
      expect(calls.get(event.id)).toBe(1);
    } finally {
      await restarted.stop();
    }
  });

  it('acks an event the consumer finds irrelevant without a transaction, and applies the relevant ones', async () => {
    const durable = 'kit-picky';
    const picky = await consumeEvents({
      bus: runtime.bus,
      pool: runtime.pool,
      log: logs.log,
      spec: { stream: STREAM.name, durable, filter: 'kit.picky.*' },
      relevant: (event) => (event.data as { n: number }).n % 2 === 0,
      handle,
    });
    try {
      const events = [7, 8].map((n) => ({ ...envelope(n), subject: 'kit.picky.created' }));
      for (const event of events) await publishRaw(event, event.id);
      await expect.poll(() => consumerState(durable), { timeout: 5_000 }).toEqual({ pending: 0, unacked: 0 });
      const recorded = async (id: string) =>
        (
          await one<{ n: number }>(runtime.pool, 'SELECT count(*)::int AS n FROM processed_events WHERE consumer = $1 AND event_id = $2', [
            durable,
            id,
          ])
        ).n;
      const [odd, even] = events as [EventEnvelope, EventEnvelope];
      expect({ handled: calls.get(odd.id) ?? 0, applied: await appliedCount(odd.id), recorded: await recorded(odd.id) }).toEqual({
        handled: 0,
        applied: 0,
        recorded: 0,
      });
      expect({ handled: calls.get(even.id), applied: await appliedCount(even.id), recorded: await recorded(even.id) }).toEqual({
        handled: 1,
        applied: 1,
        recorded: 1,
      });
    } finally {
      await picky.stop();
    }
  });

  it('acks the events it ignores together, in a few writes to the server rather than one each', async () => {
    const durable = 'kit-ignoring';
    await waitingEvents(durable, 'kit.ignored', 60);
    const writes = vi.spyOn(Socket.prototype, 'write');
    const ignoring = await consumeEvents({
      bus: runtime.bus,
      pool: runtime.pool,
      log: logs.log,
      spec: { stream: STREAM.name, durable, filter: 'kit.ignored.*' },
      relevant: () => false,
      handle,
    });
    try {
      await expect.poll(() => consumerState(durable), { timeout: 5_000 }).toEqual({ pending: 0, unacked: 0 });
      const ackWrites = writes.mock.calls.filter(([chunk]) => Buffer.from(chunk as Uint8Array).includes('+ACK'));
      expect(ackWrites.length).toBeGreaterThan(0);
      expect(ackWrites.length).toBeLessThanOrEqual(6);
    } finally {
      writes.mockRestore();
      await ignoring.stop();
    }
  });

  /** `count` events of `prefix`, all waiting for a consumer `durable` that has not started yet (one of them twice). */
  async function waitingEvents(durable: string, prefix: string, count: number): Promise<EventEnvelope[]> {
    await runtime.bus.jsm.consumers.add(streamName, {
      durable_name: runtime.bus.name(durable),
      ack_policy: 'explicit' as never,
      filter_subject: runtime.bus.subject(`${prefix}.*`),
    });
    const events = Array.from({ length: count }, (_, i) => ({ ...envelope(i), subject: `${prefix}.created` }));
    for (const event of events) await publishRaw(event, event.id);
    // Delivered twice, as after a crash: still applied once.
    await publishRaw(events[1]!, `${events[1]!.id}-again`);
    return events;
  }
  const consumeInBatches = (durable: string, prefix: string, batch: number, apply: typeof handle) =>
    consumeEvents({
      bus: runtime.bus,
      pool: runtime.pool,
      log: logs.log,
      spec: { stream: STREAM.name, durable, filter: `${prefix}.*` },
      batch,
      handle: apply,
    });

  it('applies the events waiting together in one transaction each batch, in order and once each', async () => {
    const durable = 'kit-batched';
    const events = await waitingEvents(durable, 'kit.batched', 20);
    const order: number[] = [];
    const batched = await consumeInBatches(durable, 'kit.batched', 8, async (event, tx) => {
      order.push((event.data as { n: number }).n);
      await handle(event, tx);
    });
    try {
      await expect.poll(() => consumerState(durable), { timeout: 5_000 }).toEqual({ pending: 0, unacked: 0 });
      expect(order).toEqual(events.map((e) => (e.data as { n: number }).n));
      for (const event of events) expect(await appliedCount(event.id)).toBe(1);
      // Rows written by one transaction share its xmin: 20 events, at most 8 in each commit.
      const commits = await one<{ n: number }>(
        runtime.pool,
        'SELECT count(DISTINCT xmin::text)::int AS n FROM processed_events WHERE consumer = $1',
        [durable],
      );
      expect(commits.n).toBeGreaterThanOrEqual(3);
      expect(commits.n).toBeLessThan(10);
    } finally {
      await batched.stop();
    }
  });

  it('applies each event of a failed batch on its own: the others commit, the failing one is redelivered', async () => {
    const durable = 'kit-batched-failure';
    const events = await waitingEvents(durable, 'kit.batchfail', 6);
    failOnce.add(events[2]!.id);
    const batched = await consumeInBatches(durable, 'kit.batchfail', 10, handle);
    try {
      await expect.poll(() => consumerState(durable), { timeout: 5_000 }).toEqual({ pending: 0, unacked: 0 });
      for (const event of events) expect(await appliedCount(event.id)).toBe(1);
      // Those before the failing one ran in the rolled-back batch, then again on their own; those after, once.
      expect(events.map((e) => calls.get(e.id))).toEqual([2, 2, 2, 1, 1, 1]);
    } finally {
      await batched.stop();
    }
  });

  it('applyOnce answers false and skips the handler for an event this consumer already applied', async () => {
    const event = envelope(6);
    expect(await applyOnce(runtime.pool, 'kit-direct', event, handle)).toBe(true);
    expect(await applyOnce(runtime.pool, 'kit-direct', event, handle)).toBe(false);
    expect(calls.get(event.id)).toBe(1);
    expect(await applyOnce(runtime.pool, 'another-consumer', event, handle)).toBe(true);
  });
});

describe('contracts at the outbox and at the consumer', () => {
  const logs = captureLogs('error');
  const user = { id: '0190a6e2-7c1b-7cde-8f00-123456789abc', username: 'ada', displayName: 'Ada', avatarUrl: null, badges: [] };
  const outboxCount = async () => (await one<{ n: number }>(runtime.pool, 'SELECT count(*)::int AS n FROM outbox')).n;

  it('writes an event parsed by its contract: what the contract does not name is stripped', async () => {
    const id = await commitEvent('auth.user.updated', { ...user, passwordHash: 'never-on-the-bus' });
    const [row] = await many<{ payload: EventEnvelope }>(runtime.pool, 'SELECT payload FROM outbox WHERE id = $1', [id]);
    expect(row?.payload.data).toEqual(user);
  });

  it('refuses a payload that breaks its contract, and a service subject without one, writing nothing', async () => {
    const before = await outboxCount();
    await expect(commitEvent('auth.user.updated', { ...user, username: 42 })).rejects.toThrow(/auth\.user\.updated breaks its contract/);
    await expect(commitEvent('guilds.nothing.happened', {})).rejects.toThrow(/has no contract/);
    expect(await outboxCount()).toBe(before);
  });

  it('sends an event whose payload breaks its contract to the dead letters with a log line, and goes on', async () => {
    await ensureStream(runtime.bus, { name: 'AUTH', subjects: ['auth.>'] });
    await ensureStream(runtime.bus, { name: 'DEADLETTER', subjects: ['deadletter.>'] });
    const handled: unknown[] = [];
    const consumer = await consumeEvents({
      bus: runtime.bus,
      pool: runtime.pool,
      log: logs.log,
      spec: { stream: 'AUTH', durable: 'kit-users', filter: 'auth.user.*' },
      handle: async (event) => {
        handled.push(event.data);
      },
    });
    try {
      const publish = (data: unknown) => {
        const envelope = { id: crypto.randomUUID(), subject: 'auth.user.updated', occurredAt: new Date().toISOString(), data };
        return runtime.bus.js.publish(runtime.bus.subject('auth.user.updated'), JSON.stringify(envelope)).then(() => envelope.id);
      };
      const broken = await publish({ ...user, badges: 'founder' });
      await publish({ ...user, extra: 'stripped' });
      await expect.poll(() => handled.length, { timeout: 5_000 }).toBe(1);
      expect(handled).toEqual([user]);
      const dead = await runtime.bus.jsm.streams.getMessage(runtime.bus.name('DEADLETTER'), {
        last_by_subj: runtime.bus.subject('deadletter.kit-users.auth.user.updated'),
      });
      expect(dead?.json<EventEnvelope>().id).toBe(broken);
      expect(dead?.header.get('Dead-Letter-Reason')).toBe('payload breaks its contract');
      expect(logs.entries().some((e) => e.eventId === broken && e.msg === 'event cannot be read; sent to the dead letters')).toBe(true);
    } finally {
      await consumer.stop();
    }
  });
});
