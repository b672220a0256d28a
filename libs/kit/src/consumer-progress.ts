import { type ConsumerInfo, JetStreamApiCodes, JetStreamApiError } from '@nats-io/jetstream';
import type { Logger } from 'pino';
import type { Bus, DurableConsumerSpec } from './bus.ts';
import { exec, maybeOne, type Pool } from './db.ts';

/**
 * Events a durable consumer has not read that its stream no longer holds: the retention
 * (EVENT_RETENTION_DAYS) or an operator dropped them first.
 */
export interface LostEvents {
  /** The durable existed (it was away longer than the stream keeps events); otherwise it is about to be made. */
  durableExisted: boolean;
  /** The stream sequences gone unread; a filtered consumer's range holds other subjects' events as well. */
  from: number;
  to: number;
  /** The stream's last sequence when checked: a backfill read after it covers every event up to it. */
  lastSequence: number;
}

// How often a running consumer saves how far it has read: what a start after a crash can rely on.
const MARK_EVERY_MS = 60_000;

const MARK_OF =
  'SELECT read_up_to::float8 AS "readUpTo" FROM event_consumer_marks WHERE stream = $1 AND durable = $2 AND stream_created = $3';
// Every replica saves its own reading, each one true: the furthest is kept, unless the stream was made again.
const SAVE_MARK = `INSERT INTO event_consumer_marks (stream, durable, stream_created, read_up_to) VALUES ($1, $2, $3, $4)
   ON CONFLICT (stream, durable) DO UPDATE SET
     read_up_to = CASE WHEN event_consumer_marks.stream_created = EXCLUDED.stream_created
                       THEN GREATEST(event_consumer_marks.read_up_to, EXCLUDED.read_up_to) ELSE EXCLUDED.read_up_to END,
     stream_created = EXCLUDED.stream_created, marked_at = now()`;

/**
 * The events the durable will never get: for a new durable, those the stream dropped before it
 * existed; for one that exists, those dropped after what it is known to have read (its own
 * position, or its saved mark when its filter's last event lies further back). Undefined when none.
 */
export async function lostEvents(bus: Bus, pool: Pool, spec: DurableConsumerSpec): Promise<LostEvents | undefined> {
  const info = await consumerInfo(bus, spec);
  const { state, created } = await bus.jsm.streams.info(bus.name(spec.stream));
  // A stream that never held an event has first_seq 0; one that dropped every event, last_seq + 1.
  const gone = state.first_seq - 1;
  const lost = (from: number, durableExisted: boolean): LostEvents | undefined =>
    from <= gone ? { durableExisted, from, to: gone, lastSequence: state.last_seq } : undefined;
  if (!info) return lost(1, false);
  const mark = await maybeOne<{ readUpTo: number }>(pool, MARK_OF, [bus.name(spec.stream), bus.name(spec.durable), created]);
  return lost(Math.max(readPosition(info), mark?.readUpTo ?? 0) + 1, true);
}

/** Saves how far the durable has read for sure. */
export async function markProgress(bus: Bus, pool: Pool, spec: DurableConsumerSpec): Promise<void> {
  const stream = bus.name(spec.stream);
  const durable = bus.name(spec.durable);
  // The stream first: a consumer found caught up afterwards has read every event of its filter up to that last one.
  const { state, created } = await bus.jsm.streams.info(stream);
  const info = await bus.jsm.consumers.info(stream, durable);
  const read = readPosition(info);
  // Caught up, and nothing dropped unread in between (num_pending counts only the events still kept).
  const caughtUp = read >= state.first_seq - 1 && info.num_pending === 0 && info.num_ack_pending === 0;
  await exec(pool, SAVE_MARK, [stream, durable, created, caughtUp ? state.last_seq : read]);
}

/**
 * Marks the durable's progress every `everyMs` while it runs (what a start after a crash relies on),
 * and once more when it stops (nothing to mark without the bus).
 */
export function keepMarking(
  bus: Bus,
  pool: Pool,
  spec: DurableConsumerSpec,
  log: Logger,
  everyMs = MARK_EVERY_MS,
): { stop(): Promise<void> } {
  const mark = () =>
    bus.connected ? markProgress(bus, pool, spec).catch((err) => log.debug({ err }, 'could not mark the consumer progress')) : undefined;
  const timer = setInterval(() => void mark(), everyMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await mark();
    },
  };
}

/** The stream sequence up to which the durable acked everything it was given. */
function readPosition(info: ConsumerInfo): number {
  return info.num_ack_pending === 0 ? info.delivered.stream_seq : info.ack_floor.stream_seq;
}

async function consumerInfo(bus: Bus, spec: DurableConsumerSpec): Promise<ConsumerInfo | undefined> {
  return bus.jsm.consumers.info(bus.name(spec.stream), bus.name(spec.durable)).catch((err: unknown) => {
    if (err instanceof JetStreamApiError && err.code === JetStreamApiCodes.ConsumerNotFound) return undefined;
    throw err;
  });
}
