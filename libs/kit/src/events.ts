import type { ConsumerMessages } from '@nats-io/jetstream';
import pg from 'pg';
import type { Logger } from 'pino';
import { v7 as uuidv7 } from 'uuid';
import { type Bus, type DurableConsumerSpec, type EventEnvelope, ensureConsumer, REQUEST_ID_HEADER, requestHeaders } from './bus.ts';
import { type Pool, type Queryable, withTx } from './db.ts';

/**
 * Records an event in the outbox inside the caller's transaction, so the event exists exactly
 * when the change does. The relay publishes it after commit.
 */
export async function enqueueEvent(tx: Queryable, subject: string, data: unknown, requestId?: string): Promise<string> {
  const id = uuidv7();
  const envelope: EventEnvelope = { id, subject, occurredAt: new Date().toISOString(), data };
  await tx.query('INSERT INTO outbox (id, subject, payload, headers) VALUES ($1, $2, $3, $4)', [
    id,
    subject,
    envelope,
    requestId ? { [REQUEST_ID_HEADER]: requestId } : {},
  ]);
  return id;
}

export interface Relay {
  /** Publishes whatever is pending now and waits for it (tests and shutdown). */
  flush(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Publishes outbox rows to JetStream in commit order, with the event id as Nats-Msg-Id so a
 * republish after a crash is deduplicated by the stream. Wakes on NOTIFY and polls as a fallback.
 */
export function startOutboxRelay(options: {
  pool: Pool;
  databaseUrl: string;
  bus: Bus;
  log: Logger;
  batchSize?: number;
  pollMs?: number;
}): Relay {
  const { pool, bus, log } = options;
  const batchSize = options.batchSize ?? 200;
  let running = true;
  let wake: (() => void) | undefined;
  let current: Promise<void> = Promise.resolve();
  let lastFailureLog = 0;

  const listener = listenForCommits(options.databaseUrl, () => wake?.(), log);

  async function publishBatch(): Promise<number> {
    return withTx(pool, async (tx) => {
      const { rows } = await tx.query<{
        seq: number;
        id: string;
        subject: string;
        payload: EventEnvelope;
        headers: Record<string, string>;
      }>('SELECT seq, id, subject, payload, headers FROM outbox WHERE sent_at IS NULL ORDER BY seq LIMIT $1 FOR UPDATE SKIP LOCKED', [
        batchSize,
      ]);
      if (rows.length === 0) return 0;
      // One connection keeps publish order; awaiting all acks together keeps the batch fast.
      await Promise.all(
        rows.map((row) =>
          bus.js.publish(bus.subject(row.subject), JSON.stringify(row.payload), {
            msgID: row.id,
            headers: requestHeaders(row.headers[REQUEST_ID_HEADER]),
          }),
        ),
      );
      await tx.query('UPDATE outbox SET sent_at = now() WHERE seq = ANY($1)', [rows.map((r) => r.seq)]);
      return rows.length;
    });
  }

  async function drain(): Promise<void> {
    while (running && (await publishBatch()) === batchSize) {}
  }

  async function loop() {
    while (running) {
      current = drain().catch((err) => {
        if (Date.now() - lastFailureLog > 10_000) {
          lastFailureLog = Date.now();
          log.warn({ err }, 'outbox relay could not publish; will retry');
        }
      });
      await current;
      await new Promise<void>((resolve) => {
        wake = resolve;
        setTimeout(resolve, options.pollMs ?? 1_000).unref();
      });
    }
  }
  void loop();

  return {
    async flush() {
      await current;
      await drain();
    },
    async stop() {
      running = false;
      wake?.();
      await current;
      await listener.close();
    },
  };
}

/**
 * A dedicated connection LISTENing for commits that wrote events. If it drops, the relay still
 * polls, and the listener reconnects after a pause.
 */
function listenForCommits(databaseUrl: string, onCommit: () => void, log: Logger): { close(): Promise<void> } {
  let client: pg.Client | undefined;
  let closed = false;
  let retry: NodeJS.Timeout | undefined;
  const connectOnce = async () => {
    const next = new pg.Client({ connectionString: databaseUrl });
    next.on('notification', onCommit);
    next.on('error', () => {
      if (closed) return;
      next.end().catch(() => {});
      retry = setTimeout(() => void connectOnce(), 1_000);
    });
    try {
      await next.connect();
      await next.query('LISTEN outbox');
      client = next;
      if (closed) await next.end();
    } catch (err) {
      log.warn({ err }, 'outbox LISTEN failed; relay polls until it reconnects');
      if (!closed) retry = setTimeout(() => void connectOnce(), 5_000);
    }
  };
  void connectOnce();
  return {
    async close() {
      closed = true;
      clearTimeout(retry);
      await client?.end().catch(() => {});
    },
  };
}

export interface ConsumerHandle {
  stop(): Promise<void>;
}

/**
 * Applies each event of a durable consumer exactly once: the handler runs in a transaction that
 * also records the event id, and the message is acked only after that commit. A redelivery of an
 * applied event is acked without running the handler again.
 */
export async function consumeEvents(options: {
  bus: Bus;
  pool: Pool;
  log: Logger;
  spec: DurableConsumerSpec;
  handle: (event: EventEnvelope, tx: Queryable) => Promise<void>;
}): Promise<ConsumerHandle> {
  const { bus, pool, spec } = options;
  await ensureConsumer(bus, spec);
  const consumer = await bus.js.consumers.get(bus.name(spec.stream), bus.name(spec.durable));
  const messages: ConsumerMessages = await consumer.consume({ max_messages: 100 });
  const log = options.log.child({ consumer: spec.durable });
  const done = (async () => {
    for await (const msg of messages) {
      const event = msg.json<EventEnvelope>();
      event.subject = bus.logical(msg.subject);
      try {
        await applyOnce(pool, spec.durable, event, options.handle);
        msg.ack();
      } catch (err) {
        log.error({ err, eventId: event.id, subject: event.subject }, 'event handler failed; will be redelivered');
        msg.nak(1_000);
      }
    }
  })();
  return {
    async stop() {
      await messages.close();
      await done;
    },
  };
}

export async function applyOnce(
  pool: Pool,
  consumer: string,
  event: EventEnvelope,
  handle: (event: EventEnvelope, tx: Queryable) => Promise<void>,
): Promise<boolean> {
  return withTx(pool, async (tx) => {
    const fresh = await tx.query('INSERT INTO processed_events (consumer, event_id) VALUES ($1, $2) ON CONFLICT DO NOTHING', [
      consumer,
      event.id,
    ]);
    if (fresh.rowCount === 0) return false;
    await handle(event, tx);
    return true;
  });
}
