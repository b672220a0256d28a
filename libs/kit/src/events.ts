import { setTimeout as sleep } from 'node:timers/promises';
import { deadLetterSubject, EVENT_SCHEMAS, type RpcContract, SERVICE_EVENT_PREFIXES, STREAMS } from '@chat/contracts';
import type { ConsumerMessages, JsMsg } from '@nats-io/jetstream';
import { headers as natsHeaders, type Subscription } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import { v7 as uuidv7 } from 'uuid';
import type { z } from 'zod';
import {
  type Bus,
  type DurableConsumerSpec,
  type EventEnvelope,
  ensureConsumer,
  ensureStream,
  headerRecord,
  PULL_EXPIRES_MS,
  REQUEST_ID_HEADER,
  requestHeaders,
  requestRpc,
  type StreamSpec,
  whenConnected,
} from './bus.ts';
import { keepMarking, type LostEvents, lostEvents, markProgress } from './consumer-progress.ts';
import { exec, exists, markEventsWritten, onEventsCommitted, type Pool, prepared, type Queryable, withTx } from './db.ts';
import { AppError } from './errors.ts';
import { consumerLostEvents, consumerRedeliveries, watchConsumer, watchOutbox } from './metrics.ts';
import { walkPages } from './paging.ts';
import { contextWithSpan, endSpan, extractContext, SpanKind, startSpan, traceHeaders, withSpan } from './tracing.ts';

// The relay's and the consumers' statements run for every event: prepared.
const UNSENT_EVENTS = prepared(
  'SELECT seq, id, subject, payload, headers FROM outbox WHERE sent_at IS NULL ORDER BY seq LIMIT $1 FOR UPDATE SKIP LOCKED',
);
const MARK_SENT = prepared('UPDATE outbox SET sent_at = now() WHERE seq = ANY($1)');
// Oldest first along the primary key: the published rows are the oldest, so the walk stops early.
const PURGE_SENT =
  'DELETE FROM outbox WHERE seq IN (SELECT seq FROM outbox WHERE sent_at < now() - make_interval(secs => $1) ORDER BY seq LIMIT $2)';
const RECORD_PROCESSED = prepared('INSERT INTO processed_events (consumer, event_id) VALUES ($1, $2) ON CONFLICT DO NOTHING');
const PURGE_PROCESSED = `DELETE FROM processed_events WHERE ctid IN (
  SELECT ctid FROM processed_events WHERE processed_at < now() - make_interval(secs => $1) LIMIT $2)`;
const RECORD_PROCESSED_BATCH = prepared(
  'INSERT INTO processed_events (consumer, event_id) SELECT $1, unnest($2::uuid[]) ON CONFLICT DO NOTHING RETURNING event_id',
);
const ALREADY_PROCESSED = 'SELECT 1 FROM processed_events WHERE consumer = $1 AND event_id = $2';

/**
 * Records an event in the outbox inside the caller's transaction, so the event exists exactly
 * when the change does. The relay publishes it after commit. The payload is parsed by its
 * contract (EVENT_SCHEMAS) first, so what is written is what the contract names and nothing more;
 * a payload that breaks it, or a service subject without a contract, is a bug that fails the
 * change. Subjects outside the services' namespaces (the kit's own tests) are written as given.
 */
export async function enqueueEvent(tx: Queryable, subject: string, data: unknown, requestId?: string): Promise<string> {
  const row = outboxRow(subject, data, requestId);
  await tx.query('INSERT INTO outbox (id, subject, payload, headers) VALUES ($1, $2, $3, $4)', [
    row.id,
    row.subject,
    row.payload,
    row.headers,
  ]);
  markEventsWritten(tx);
  return row.id;
}

/**
 * Events of one change written in one statement, in the order given (the relay publishes in the
 * outbox's order): for a change that makes many at once (a template import), one round trip
 * instead of one per event. Each row comes from `outboxRow`, parsed by its contract.
 */
export async function enqueueEvents(tx: Queryable, rows: OutboxRow[]): Promise<void> {
  if (rows.length === 0) return;
  await tx.query(
    `INSERT INTO outbox (id, subject, payload, headers)
     SELECT e.id, e.subject, e.payload, e.headers
     FROM unnest($1::uuid[], $2::text[], $3::jsonb[], $4::jsonb[]) WITH ORDINALITY AS e(id, subject, payload, headers, ord)
     ORDER BY e.ord`,
    [
      rows.map((r) => r.id),
      rows.map((r) => r.subject),
      rows.map((r) => JSON.stringify(r.payload)),
      rows.map((r) => JSON.stringify(r.headers)),
    ],
  );
  markEventsWritten(tx);
}

/** An outbox row as enqueueEvent writes it: the event's id, subject, envelope and headers. */
export interface OutboxRow {
  id: string;
  subject: string;
  payload: EventEnvelope;
  headers: Record<string, string>;
}

/**
 * The outbox row of an event, payload parsed by its contract as in enqueueEvent, for a statement
 * that writes the change and its event at once (a service's SQL function inserts it into `outbox`
 * itself). Whoever runs that statement calls markEventsWritten on the same queryable afterwards,
 * so the relay hears of the commit.
 */
export function outboxRow(subject: string, data: unknown, requestId?: string): OutboxRow {
  const id = uuidv7();
  return {
    id,
    subject,
    payload: { id, subject, occurredAt: new Date().toISOString(), data: payloadOf(subject, data) },
    // The trace context of the change travels with its event, through the relay into the consumers.
    headers: { ...(requestId ? { [REQUEST_ID_HEADER]: requestId } : {}), ...traceHeaders() },
  };
}

function payloadOf(subject: string, data: unknown): unknown {
  const schema = EVENT_SCHEMAS[subject];
  if (!schema) {
    if (SERVICE_EVENT_PREFIXES.includes(subject.split('.')[0] ?? '')) throw new Error(`Event ${subject} has no contract`);
    return data;
  }
  const parsed = schema.safeParse(data);
  if (!parsed.success) throw new Error(`Event ${subject} breaks its contract: ${parsed.error.message}`);
  return parsed.data;
}

const RELAY_LOCK_KEY = 727_002;
const TRY_RELAY_LOCK = prepared('SELECT pg_try_advisory_xact_lock($1) AS held');

/** Backs off a failing event: 1 s, 2 s, 4 s... up to a minute; it is never dropped. */
export function redeliveryDelayMs(deliveryCount: number): number {
  return Math.min(60_000, 1_000 * 2 ** Math.max(0, deliveryCount - 1));
}

export interface Relay {
  /** Publishes whatever is pending now and waits for it (tests and shutdown). */
  flush(): Promise<void>;
  stop(): Promise<void>;
}

/** How long a published event stays in the outbox (to inspect what was sent), then it is deleted. */
const SENT_RETENTION_MS = 60 * 60_000;
const PURGE_EVERY_MS = 5 * 60_000;
/** Rows one purge statement deletes: short locks and bounded WAL, repeated until the backlog is gone. */
const PURGE_BATCH = 10_000;

/**
 * Publishes outbox rows to JetStream in commit order, with the event id as Nats-Msg-Id so a
 * republish after a crash is deduplicated by the stream. Wakes after each commit that wrote
 * events and polls for other replicas' commits. While the bus is away the rows wait in the outbox
 * (writes go on); a batch cut off by a disconnect is abandoned at once and sent again as soon as the
 * bus is back, rather than after its publish timeout (the stream drops the repeats by id).
 */
export function startOutboxRelay(options: {
  pool: Pool;
  bus: Bus;
  log: Logger;
  /** Created when missing before the first publish (a process may start before the bus). */
  stream?: StreamSpec;
  batchSize?: number;
  pollMs?: number;
  /** How long published events are kept; the outbox would otherwise grow by every event ever written. */
  retentionMs?: number;
  /** How often the relay deletes the published events past their retention. */
  purgeEveryMs?: number;
}): Relay {
  const { pool, bus, log } = options;
  let streamReady = !options.stream;
  // Rejects the batch in flight when the connection drops: its acks will never come.
  let abandonBatch: ((err: Error) => void) | undefined;
  // Counts the drops, so that a batch can tell that one came before it was ready to be abandoned.
  let drops = 0;
  const dropped = () => new AppError(503, 'Message bus disconnected during a publish');
  const unwatch = bus.onConnection((up) => {
    if (up) return wake?.();
    drops++;
    abandonBatch?.(dropped());
  });
  const batchSize = options.batchSize ?? 200;
  const pollMs = options.pollMs ?? 250;
  const retentionSeconds = (options.retentionMs ?? SENT_RETENTION_MS) / 1000;
  let running = true;
  // Set by every commit that wrote events: a commit that lands while a batch is publishing must not wait for the poll.
  let committedSinceDrain = false;
  let wake: (() => void) | undefined;
  // Drains run one after the other: two at once would split the rows (SKIP LOCKED) and publish them
  // out of order, and a flush() could return while the other one still publishes its rows.
  let queue: Promise<unknown> = Promise.resolve();
  let lastFailureLog = 0;

  // Commits in this process wake the relay at once; the poll catches other replicas' commits.
  const unsubscribe = onEventsCommitted(() => {
    committedSinceDrain = true;
    wake?.();
  });
  const unwatchOutbox = watchOutbox(pool);

  async function publishBatch(): Promise<number> {
    if (!bus.connected) throw new AppError(503, 'Message bus unavailable');
    const dropsBefore = drops;
    if (!streamReady && options.stream) {
      await ensureStream(bus, options.stream);
      streamReady = true;
    }
    return withTx(pool, async (tx) => {
      // One relay at a time per database, so that replicas cannot interleave batches out of order.
      const { rows: lock } = await tx.query<{ held: boolean }>(TRY_RELAY_LOCK, [RELAY_LOCK_KEY]);
      if (!lock[0]?.held) return 0;
      const { rows } = await tx.query<{
        seq: number;
        id: string;
        subject: string;
        payload: EventEnvelope;
        headers: Record<string, string>;
      }>(UNSENT_EVENTS, [batchSize]);
      if (rows.length === 0) return 0;
      // One connection keeps publish order; awaiting all acks together keeps the batch fast.
      const acks = Promise.all(
        rows.map(async (row) => {
          // A span of the publication, under the change that wrote the event; consumers continue from it.
          const span = startSpan(`publish ${row.subject}`, {
            kind: SpanKind.PRODUCER,
            parent: extractContext(row.headers),
            attributes: { 'messaging.system': 'nats', 'messaging.destination.name': row.subject, 'messaging.message.id': row.id },
          });
          try {
            const ack = await bus.js.publish(bus.subject(row.subject), JSON.stringify(row.payload), {
              msgID: row.id,
              headers: requestHeaders(row.headers[REQUEST_ID_HEADER], traceHeaders(contextWithSpan(span))),
            });
            endSpan(span);
            return ack;
          } catch (err) {
            endSpan(span, err);
            throw err;
          }
        }),
      );
      // A drop while the rows were read (before abandonBatch was set) may have swallowed publishes too.
      const cut = new Promise<never>((_, reject) => {
        abandonBatch = reject;
        if (drops !== dropsBefore) reject(dropped());
      });
      try {
        await Promise.race([acks, cut]);
      } finally {
        abandonBatch = undefined;
        // An abandoned batch's acks still settle later (timeouts); nobody waits for them.
        acks.catch(() => {});
      }
      await tx.query(MARK_SENT, [rows.map((r) => r.seq)]);
      return rows.length;
    });
  }

  function drain(): Promise<void> {
    const run = async () => {
      committedSinceDrain = false;
      while (running && (await publishBatch()) === batchSize) {}
    };
    const next = queue.then(run, run);
    queue = next.catch(() => {});
    return next;
  }

  function logFailure(err: unknown) {
    if (Date.now() - lastFailureLog < 10_000) return;
    lastFailureLog = Date.now();
    log.warn({ err }, 'outbox relay could not publish; will retry');
  }

  /** Answers whether something woke the relay (a commit, the bus back) rather than the poll's timer. */
  function nextWake(): Promise<boolean> {
    return new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), pollMs);
      timer.unref();
      wake = () => {
        clearTimeout(timer);
        resolve(true);
      };
    });
  }

  /** The poll finds other replicas' commits and rows a failed batch left: it asks before it drains. */
  async function anyUnsent(): Promise<boolean> {
    try {
      // One statement instead of a batch's transaction while there is nothing to send.
      return await exists(pool, 'SELECT 1 FROM outbox WHERE sent_at IS NULL');
    } catch (err) {
      logFailure(err);
      return false;
    }
  }

  /** Deletes the events published longer ago than the retention, in batches; answers how many. */
  async function purge(): Promise<number> {
    let purged = 0;
    for (;;) {
      const deleted = await exec(pool, PURGE_SENT, [retentionSeconds, PURGE_BATCH]);
      purged += deleted;
      if (deleted < PURGE_BATCH || !running) return purged;
    }
  }

  async function loop() {
    let woken = true;
    while (running) {
      if (woken || (await anyUnsent())) await drain().catch(logFailure);
      woken = committedSinceDrain || !running || (await nextWake());
    }
  }
  void loop();

  // Beside the publishing loop, not in it: a long delete never holds back the events just committed.
  // A tick while a purge runs is skipped: that purge goes on until the backlog is gone.
  let purging: Promise<void> | undefined;
  const purgeTimer = setInterval(() => {
    purging ??= purge()
      .then((purged) => void (purged > 0 && log.debug({ purged }, 'outbox: published events past their retention deleted')))
      .catch((err) => log.warn({ err }, 'outbox relay could not purge published events; will retry'))
      .finally(() => {
        purging = undefined;
      });
  }, options.purgeEveryMs ?? PURGE_EVERY_MS);
  purgeTimer.unref();

  return {
    flush: drain,
    async stop() {
      running = false;
      clearInterval(purgeTimer);
      wake?.();
      await Promise.all([queue, purging]);
      unsubscribe();
      unwatch();
      unwatchOutbox();
    },
  };
}

/**
 * Deletes the records of events applied longer ago than the streams keep an event (`retentionMs`,
 * the bus's): such an event can no longer be delivered again, so its record guards nothing. Without
 * this the table grows by every event each consumer ever applied. In batches; answers how many.
 */
export async function purgeProcessedEvents(db: Queryable, retentionMs: number): Promise<number> {
  let purged = 0;
  for (;;) {
    const deleted = await exec(db, PURGE_PROCESSED, [retentionMs / 1000, PURGE_BATCH]);
    purged += deleted;
    if (deleted < PURGE_BATCH) return purged;
  }
}

export interface ConsumerHandle {
  stop(): Promise<void>;
}

/**
 * Applies each event of a durable consumer exactly once: the handler runs in a transaction that
 * also records the event id, and the message is acked only after that commit. A redelivery of an
 * applied event is acked without running the handler again. The payload is parsed by its contract
 * first; a message that is not an event envelope, or whose payload breaks its contract, would fail
 * the same way for ever, so it goes to the dead letters (`deadletter.<durable>.<subject>`, stream
 * DEADLETTER) with a log line, and the consumer moves on.
 */
export async function consumeEvents<P = undefined>(options: {
  bus: Bus;
  pool: Pool;
  log: Logger;
  spec: DurableConsumerSpec;
  /** The stream followed, created when missing (its owner may start later). */
  stream?: StreamSpec;
  /** Applies the event, in the transaction that records it as applied; `prepared` is what `prepare` answered. */
  handle: (event: EventEnvelope, tx: Queryable, prepared: P) => Promise<void>;
  /**
   * The slow part of applying an event that needs no transaction (fetching pages, asking another
   * service), run before the handler's transaction opens, so that no database connection waits on
   * it; `handle` gets what it answers and only stores it. A throw fails the event as one from
   * `handle` does (redelivered later). It may run more than once for one event (a redelivery after
   * a failure, or after a crash before the commit), so it changes nothing that must happen once:
   * that belongs in `handle`, which still runs once per event. An event already applied is acked
   * without being prepared again. Not with `batch`.
   */
  prepare?: (event: EventEnvelope) => Promise<P>;
  /**
   * Apply up to this many events at once, each in its own transaction and acked after its own
   * commit, for a consumer whose events are independent of one another (the link previews of two
   * messages): a slow event then holds back only itself, in one of the slots. Events apply and
   * are acked out of stream order; the durable's progress (its ack floor, what a start after a
   * crash counts as read) stays behind the oldest event still in flight. Waits for a free slot
   * before reading on, so at most this many run; an event the consumer ignores (`relevant`) takes
   * none. At most `spec.maxAckPending` when that is set; not with `batch`. One at a time, in
   * stream order, when not given.
   */
  concurrency?: number;
  /**
   * Whether `handle` would do anything with the event. One that it would ignore (a message without
   * links, for the link previews) is acked without a transaction: doing nothing needs no record of
   * having done it, and every consumer of a busy subject would otherwise commit once per event.
   */
  relevant?: (event: EventEnvelope) => boolean;
  /**
   * What this consumer reads of each subject (a tolerant reader names only the fields it uses);
   * EVENT_SCHEMAS, the whole contract, when not given. A subject in neither arrives unparsed.
   */
  schemas?: Readonly<Record<string, z.ZodType>>;
  /**
   * Apply up to this many events in one transaction (those waiting, and those arriving within a few
   * ms of the first), one commit for the lot instead of one each: for a consumer that sees an event
   * for every message posted. Events still apply in order and once each; when the shared
   * transaction fails, each event of it is applied on its own as without batching, so one bad event
   * holds no other back. Only for handlers that lock little: a batch holds its locks until its commit.
   */
  batch?: number;
  /** How a batch is applied, when its events share work (one statement for all); each in turn by `handle` otherwise. */
  handleBatch?: (events: EventEnvelope[], tx: Queryable) => Promise<void>;
  /**
   * For a read-model: builds what the events it can no longer get would have built, by asking
   * their owner. Runs when the stream dropped events (EVENT_RETENTION_DAYS) that the durable never
   * read: before a new durable is created, or when an existing one was away longer than the stream
   * keeps events (it is then made again). The durable is created only after it succeeds, so one that
   * fails runs again on the next start, and it starts after the stream's last event from before the
   * backfill. An event committed before a page was read may still be published after
   * that, so applying it after the backfill must leave the newer state (versioned upserts, set
   * operations). It may take minutes, so the consumer starts in the background, and stopping it
   * aborts `signal`. Answers how many records it read.
   */
  backfill?: (signal: AbortSignal) => Promise<number>;
}): Promise<ConsumerHandle> {
  checkCombination(options);
  const what = `consumer ${options.spec.durable}`;
  // Starts now when the bus is connected, otherwise as soon as it connects.
  if (!options.backfill) return whenConnected(options.bus, options.log, what, () => startConsuming(options));
  // The service does not wait for a backfill (a liveness probe would not either): its read-model
  // already copes with a miss, as for an event still in flight.
  const stopping = new AbortController();
  const task = whenConnected(options.bus, options.log, what, () => startConsuming(options, stopping.signal), stopping.signal);
  return {
    async stop() {
      stopping.abort();
      await (await task).stop();
    },
  };
}

/** What consumeEvents is given, `P` being what its `prepare` answers. */
type ConsumeOptions<P> = Parameters<typeof consumeEvents<P>>[0];

/** Options that cannot work together are a bug of the consumer's code: it fails at start, not on its first event. */
function checkCombination<P>({ spec, batch, prepare, concurrency }: ConsumeOptions<P>): void {
  const fail = (why: string) => {
    throw new Error(`consumer ${spec.durable}: ${why}`);
  };
  // A batch shares one transaction in stream order; preparing or running events apart is the opposite.
  if (batch && (prepare || concurrency)) fail('batch cannot be combined with prepare or concurrency');
  if (concurrency === undefined) return;
  if (!Number.isInteger(concurrency) || concurrency < 1) fail(`concurrency must be a whole number from 1, not ${concurrency}`);
  if (spec.maxAckPending && concurrency > spec.maxAckPending)
    fail(`concurrency ${concurrency} can never be reached with maxAckPending ${spec.maxAckPending}`);
}

async function startConsuming<P>(options: ConsumeOptions<P>, stopping?: AbortSignal): Promise<ConsumerHandle> {
  const { bus, pool, spec } = options;
  const log = options.log.child({ consumer: spec.durable });
  if (options.stream) await ensureStream(bus, options.stream);
  // The lock and its connection only when a backfill looks needed: most starts find nothing lost.
  const { backfill } = options;
  const lost = await lostEvents(bus, pool, spec);
  if (lost && backfill && stopping) await backfillIfEventsLost(options, backfill, stopping, log);
  else await ensureConsumer(bus, spec);
  reportLostEvents(log, spec, backfill ? undefined : lost);
  // Before it reads: a start that comes next must not count what this one dealt with, whatever its durable acked by then.
  await markProgress(bus, pool, spec, true);
  const consumer = await bus.js.consumers.get(bus.name(spec.stream), bus.name(spec.durable));
  const messages: ConsumerMessages = await consumer.consume({ max_messages: 100, expires: PULL_EXPIRES_MS });
  // A consumer allowed fewer unacked messages would stall on acks that wait.
  const ignored = lingeringAcks(Math.min(ACKS_AT_MOST, spec.maxAckPending ?? ACKS_AT_MOST));
  const { read, applyAlone, applyTogether } = eventApplier(options, log, ignored.ack);
  const unwatch = watchConsumer(bus, spec);
  const marking = keepMarking(bus, pool, spec, log);
  const done = (
    options.batch ? inBatches(messages, options.batch, applyTogether) : inSlots(messages, options.concurrency ?? 1, read, applyAlone)
  ).catch((err) => log.error({ err }, 'event consumer stopped'));
  return {
    async stop() {
      unwatch();
      await stopPulling(messages);
      await done;
      ignored.flush();
      await marking.stop();
    },
  };
}

/**
 * Ends a consume() without stranding an event the server is sending right then. Closing alone
 * unsubscribes at once, and the client drops what arrives after that, while the server counts it
 * delivered: it is redelivered only after the ack wait (30 s), behind the events that came after it
 * (and with maxAckPending 1, every replica waits for it). Draining the pull's subscription first (the
 * unsubscribe, then a round trip) lets whatever the server sent before it saw the unsubscribe still
 * arrive and be applied. nats.js keeps that subscription on the ConsumerMessages without typing it.
 * The round trip is not awaited past STOP_DRAIN_MS: without the bus it would never end.
 */
async function stopPulling(messages: ConsumerMessages): Promise<void> {
  const { sub } = messages as ConsumerMessages & { sub?: Subscription };
  if (sub && !sub.isClosed()) await Promise.race([sub.drain().catch(() => {}), sleep(STOP_DRAIN_MS, undefined, { ref: false })]);
  await messages.close();
}

const STOP_DRAIN_MS = 2_000;

/**
 * Events that expired before an existing durable without a backfill read them: what they would
 * have changed is missing for good. Logged once (the start then marks past them), and shown as
 * jetstream_consumer_lost_events until the next start.
 */
function reportLostEvents(log: Logger, spec: DurableConsumerSpec, lost: LostEvents | undefined): void {
  const unread = lost?.durableExisted ? lost : undefined;
  consumerLostEvents.set({ consumer: spec.durable }, unread ? unread.to - unread.from + 1 : 0);
  if (!unread) return;
  log.error(
    { stream: spec.stream, from: unread.from, to: unread.to },
    'the stream dropped events this consumer had not read (it was away longer than EVENT_RETENTION_DAYS); what they changed is missing here',
  );
}

/** How a backfill asks its owner: pages of this many records, each answered within this long. */
const BACKFILL_PAGE = { limit: 500, timeoutMs: 5_000 } as const;

/**
 * What a backfill reads: every record its owner serves through a page RPC (`{after, limit}`, in key
 * order), a page at a time, each page's `rows` handed to `take` before the next is asked for, until
 * a page comes back short or `signal` aborts. Answers how many records there were.
 */
export function readOwnerPages<Rep extends z.ZodType, Row, Key>(
  bus: Bus,
  contract: RpcContract<z.ZodType<unknown, { after?: Key | undefined; limit: number }>, Rep>,
  options: {
    rows: (page: z.output<Rep>) => Row[];
    keyOf: (row: Row) => Key;
    take: (rows: Row[]) => Promise<void>;
    signal?: AbortSignal | undefined;
  },
): Promise<number> {
  return walkPages({
    limit: BACKFILL_PAGE.limit,
    signal: options.signal,
    read: async (after: Key | undefined, limit: number) =>
      options.rows(await requestRpc(bus, contract, { after, limit }, { timeoutMs: BACKFILL_PAGE.timeoutMs })),
    keyOf: options.keyOf,
    take: options.take,
  });
}

// pg_try_advisory_lock(space, hash): the kit's lock space for backfills, apart from its others.
const BACKFILL_LOCK_SPACE = 727_005;
const BACKFILL_LOCK_RETRY_MS = 1_000;

/**
 * Backfills when the stream (checked again under the lock) dropped events the durable never read:
 * a new durable's, or those of one that was away longer than the stream keeps events, which is then
 * made again. The durable then starts after the stream's last event as it was before the backfill
 * read anything: every event up to there is in what the owner answered (replaying the kept ones
 * would apply older states over it), every later one is delivered. One replica at a time (a lock in
 * the service's database): another one's backfill could write a page it read before an event that
 * this one's durable has already applied. Aborted by `stopping` between pages.
 */
async function backfillIfEventsLost<P>(
  { bus, pool, spec }: ConsumeOptions<P>,
  backfill: (signal: AbortSignal) => Promise<number>,
  stopping: AbortSignal,
  log: Logger,
): Promise<void> {
  const lock = await pool.connect();
  try {
    const key = [BACKFILL_LOCK_SPACE, `${spec.stream}/${spec.durable}`];
    while (!(await lock.query<{ held: boolean }>('SELECT pg_try_advisory_lock($1, hashtext($2)) AS held', key)).rows[0]?.held)
      await sleep(BACKFILL_LOCK_RETRY_MS, undefined, { signal: stopping });
    const lost = await lostEvents(bus, pool, spec);
    if (lost) {
      const started = Date.now();
      log.info(lost, 'the stream dropped events this read-model had not read: backfilling it from their owner');
      const records = await backfill(stopping);
      log.info({ records, ms: Date.now() - started }, 'read-model backfilled');
      stopping.throwIfAborted();
      if (lost.durableExisted) await bus.jsm.consumers.delete(bus.name(spec.stream), bus.name(spec.durable));
    }
    await ensureConsumer(bus, spec, lost?.lastSequence);
  } finally {
    // Closing the connection ends the lock with its session, whatever happened.
    lock.release(true);
  }
}

/** How long the ack of an ignored event may wait for others to go with it. */
const ACK_LINGER_MS = 5;
/** The most acks that wait: beyond, they go at once. */
const ACKS_AT_MOST = 100;

/**
 * The acks of ignored events, sent together. Each ack on its own costs a write to the server (the
 * client flushes per microtask), and a consumer that ignores most of a busy subject (link previews
 * of messages without links) would spend most of its time on those writes. An ignored event needs
 * no record, so an ack that waits a few ms changes nothing but how often the server is written to:
 * a crash before it only redelivers events that are ignored again.
 */
function lingeringAcks(atMost: number) {
  let waiting: JsMsg[] = [];
  let timer: NodeJS.Timeout | undefined;
  const flush = () => {
    clearTimeout(timer);
    timer = undefined;
    const acks = waiting;
    waiting = [];
    // In one tick: the client sends them in one write.
    for (const msg of acks) msg.ack();
  };
  const ack = (msg: JsMsg) => {
    waiting.push(msg);
    if (waiting.length >= atMost) flush();
    else timer ??= setTimeout(flush, ACK_LINGER_MS);
  };
  return { ack, flush };
}

/** The id of the request that made the event (its x-request-id header), for the consumer's log lines. */
function requestIdOfMsg(msg: JsMsg): string | undefined {
  return msg.headers?.get(REQUEST_ID_HEADER) || undefined;
}

/** What a consumer does with its messages: read each, then apply it alone or in a batch, and ack. */
function eventApplier<P>(options: ConsumeOptions<P>, log: Logger, ackIgnored: (msg: JsMsg) => void) {
  const { bus, pool, spec } = options;
  const deadLetter = async (msg: JsMsg, subject: string, reason: string, details: object) => {
    // Created on the first dead letter only: a healthy namespace gets no extra stream.
    await ensureStream(bus, STREAMS.deadLetters);
    const headers = natsHeaders();
    headers.set('Dead-Letter-Reason', reason);
    await bus.js.publish(bus.subject(deadLetterSubject(spec.durable, subject)), msg.data, { headers });
    log.error({ subject, seq: msg.seq, reason, reqId: requestIdOfMsg(msg), ...details }, 'event cannot be read; sent to the dead letters');
    msg.term();
  };
  /** The event in a message, or undefined once the message is dealt with (dead letter, or irrelevant and acked). */
  const read = async (msg: JsMsg): Promise<EventEnvelope | undefined> => {
    if (msg.info.deliveryCount > 1) consumerRedeliveries.inc({ consumer: spec.durable });
    const subject = bus.logical(msg.subject);
    const envelope = envelopeOf(msg.data, subject);
    if (!envelope) {
      await deadLetter(msg, subject, 'not an event envelope', {});
      return undefined;
    }
    const schema = (options.schemas ?? EVENT_SCHEMAS)[subject];
    const parsed = schema ? schema.safeParse(envelope.data) : { success: true as const, data: envelope.data };
    if (!parsed.success) {
      await deadLetter(msg, subject, 'payload breaks its contract', { eventId: envelope.id, issue: parsed.error.issues[0] });
      return undefined;
    }
    const event = { ...envelope, data: parsed.data };
    if (options.relevant && !options.relevant(event)) {
      ackIgnored(msg);
      return undefined;
    }
    return event;
  };
  const spanOf = (msg: JsMsg, event: EventEnvelope) =>
    startSpan(`${spec.durable} process ${event.subject}`, {
      kind: SpanKind.CONSUMER,
      parent: extractContext(headerRecord(msg.headers)),
      attributes: { 'messaging.system': 'nats', 'messaging.consumer.group.name': spec.durable, 'messaging.message.id': event.id },
    });
  /** Prepares the event (for a consumer that does), holding no connection meanwhile, then applies it once. */
  const apply = async (event: EventEnvelope): Promise<void> => {
    const { prepare, handle } = options;
    // A redelivery of an applied event: what prepare would do (fetches) would only be thrown away.
    if (prepare && (await exists(pool, ALREADY_PROCESSED, [spec.durable, event.id]))) return;
    // Without prepare, P is its default: undefined.
    const prepared = prepare ? await prepare(event) : (undefined as P);
    await applyOnce(pool, spec.durable, event, (fresh, tx) => handle(fresh, tx, prepared));
  };
  const applyAlone = async (msg: JsMsg, event: EventEnvelope) => {
    const span = spanOf(msg, event);
    try {
      await withSpan(span, () => apply(event));
      msg.ack();
      endSpan(span);
    } catch (err) {
      const traceId = span?.spanContext().traceId;
      log.error(
        { err, eventId: event.id, subject: event.subject, reqId: requestIdOfMsg(msg), traceId },
        'event handler failed; will be redelivered',
      );
      msg.nak(redeliveryDelayMs(msg.info.deliveryCount));
      endSpan(span, err);
    }
  };
  const applyTogether = async (batch: JsMsg[]) => {
    const ready: { msg: JsMsg; event: EventEnvelope }[] = [];
    for (const msg of batch) {
      const event = await read(msg);
      if (event) ready.push({ msg, event });
    }
    if (ready.length <= 1) return ready[0] && applyAlone(ready[0].msg, ready[0].event);
    const spans = new Map(ready.map(({ msg, event }) => [event, spanOf(msg, event)]));
    const events = ready.map((r) => r.event);
    const eachInTurn = async (fresh: EventEnvelope[], tx: Queryable) => {
      for (const event of fresh) await withSpan(spans.get(event), () => options.handle(event, tx, undefined as P));
    };
    try {
      await applyBatchOnce(pool, spec.durable, events, options.handleBatch ?? eachInTurn);
    } catch (err) {
      log.warn({ err, events: ready.length }, 'batch of events failed; applying them one by one');
      for (const span of spans.values()) endSpan(span, err);
      for (const { msg, event } of ready) await applyAlone(msg, event);
      return;
    }
    for (const { msg } of ready) msg.ack();
    for (const span of spans.values()) endSpan(span);
  };
  return { read, applyAlone, applyTogether };
}

/** The event envelope in a JetStream message, under its logical subject; undefined when it is not one. */
export function envelopeOf(data: Uint8Array, subject: string): EventEnvelope | undefined {
  try {
    const event = JSON.parse(new TextDecoder().decode(data)) as EventEnvelope;
    if (typeof event?.id !== 'string') return undefined;
    return { ...event, subject };
  } catch {
    return undefined;
  }
}

export async function applyOnce(
  pool: Pool,
  consumer: string,
  event: EventEnvelope,
  handle: (event: EventEnvelope, tx: Queryable) => Promise<void>,
): Promise<boolean> {
  return withTx(pool, async (tx) => {
    const fresh = await tx.query(RECORD_PROCESSED, [consumer, event.id]);
    if (fresh.rowCount === 0) return false;
    await handle(event, tx);
    return true;
  });
}

/**
 * Applies events in one transaction, each at most once per consumer: `handle` gets them in order
 * without the ids already recorded (a redelivery) or seen earlier in the batch. Rolls back as a whole.
 */
export async function applyBatchOnce(
  pool: Pool,
  consumer: string,
  events: EventEnvelope[],
  handle: (fresh: EventEnvelope[], tx: Queryable) => Promise<void>,
): Promise<void> {
  await withTx(pool, async (tx) => {
    const recorded = await tx.query<{ event_id: string }>(RECORD_PROCESSED_BATCH, [consumer, events.map((e) => e.id)]);
    const unseen = new Set(recorded.rows.map((r) => r.event_id));
    const fresh = events.filter((event) => unseen.delete(event.id));
    if (fresh.length > 0) await handle(fresh, tx);
  });
}

/** How long a batching consumer waits, once an event arrives, for more to apply with it. */
const BATCH_LINGER_MS = 5;

/**
 * Hands `work` the messages that have arrived, up to `size` at a time, in order, one batch after
 * the other; while a batch is worked on, the next ones gather. Ends when the messages end and the
 * last of them has been worked on.
 */
async function inBatches(messages: ConsumerMessages, size: number, work: (batch: JsMsg[]) => Promise<void>): Promise<void> {
  const waiting: JsMsg[] = [];
  let closed = false;
  let wake = () => {};
  let arrival = new Promise<void>((resolve) => {
    wake = resolve;
  });
  const reading = (async () => {
    try {
      for await (const msg of messages) {
        waiting.push(msg);
        wake();
      }
    } finally {
      closed = true;
      wake();
    }
  })();
  try {
    while (!closed || waiting.length > 0) {
      if (waiting.length === 0) {
        await arrival;
        arrival = new Promise<void>((resolve) => {
          wake = resolve;
        });
        // Let what arrives right after the first message join it: a few ms of delay for far fewer commits.
        await new Promise<void>((resolve) => setTimeout(resolve, BATCH_LINGER_MS));
        continue;
      }
      await work(waiting.splice(0, size));
    }
  } catch (err) {
    // Nothing works the messages any more: stop pulling them (unacked, they go to another replica).
    await messages.close();
    throw err;
  }
  await reading;
}

/**
 * Reads the messages in order and works on up to `slots` of their events at once, reading on only
 * when a slot is free; a message without an event to work on (dead-lettered, or ignored and acked)
 * takes none. With one slot, one event after the other in stream order. Ends when the messages end
 * and every event begun has been worked on; `work` does not throw (a failed event is nak'ed), and
 * a throw that gets out anyway stops the reading.
 */
async function inSlots(
  messages: ConsumerMessages,
  slots: number,
  read: (msg: JsMsg) => Promise<EventEnvelope | undefined>,
  work: (msg: JsMsg, event: EventEnvelope) => Promise<void>,
): Promise<void> {
  const running = new Set<Promise<void>>();
  let failure: { err: unknown } | undefined;
  try {
    for await (const msg of messages) {
      const event = await read(msg);
      if (!event) continue;
      const task: Promise<void> = work(msg, event)
        .catch((err: unknown) => {
          failure ??= { err };
        })
        .finally(() => running.delete(task));
      running.add(task);
      if (running.size >= slots) await Promise.race(running);
      if (failure) break;
    }
  } finally {
    // Stopping waits for the events begun: each is acked or nak'ed after its own commit, never left to time out.
    await Promise.all(running);
  }
  if (failure) throw failure.err;
}

/**
 * Publishes an event that is not stored (typing): straight to JetStream in the usual envelope, so
 * consumers read it like any other event. Nothing is written, so there is nothing to keep in step.
 */
export async function publishEphemeralEvent(bus: Bus, subject: string, data: unknown, requestId?: string): Promise<string> {
  const id = uuidv7();
  const envelope: EventEnvelope = { id, subject, occurredAt: new Date().toISOString(), data };
  await bus.js.publish(bus.subject(subject), JSON.stringify(envelope), { msgID: id, headers: requestHeaders(requestId) });
  return id;
}
