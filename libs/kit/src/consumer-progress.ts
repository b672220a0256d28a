import { setTimeout as sleep } from 'node:timers/promises';
import { type ConsumerInfo, JetStreamApiCodes, JetStreamApiError, type StreamInfo } from '@nats-io/jetstream';
import type { Logger } from 'pino';
import { type Bus, type DurableConsumerSpec, noteRetention } from './bus.ts';
import { exec, maybeOne, type Pool } from './db.ts';

/** Events a durable consumer has not read that its stream's retention (EVENT_RETENTION_DAYS) dropped first. */
export interface LostEvents {
  /** The durable existed (it was away longer than the stream keeps events); otherwise it is about to be made. */
  durableExisted: boolean;
  /** The stream sequences gone unread; a filtered consumer's range holds other subjects' events as well. */
  from: number;
  to: number;
  /** The stream's last sequence when checked: a backfill read after it covers every event up to it. */
  lastSequence: number;
}

// How often a running consumer saves how far it has read: what a start after a crash relies on.
const MARK_EVERY_MS = 60_000;
// A stop does not wait longer for its last mark (JetStream may not answer): the next start has the earlier one.
const STOP_MARK_MS = 1_000;

const MARK_OF = `SELECT read_up_to::float8 AS "readUpTo" FROM event_consumer_marks
  WHERE stream = $1 AND durable = $2 AND stream_created = $3 AND durable_created = $4`;
// Every replica saves its own reading, each one true: the furthest is kept, unless the stream or the durable was made again.
const SAVE_MARK = `INSERT INTO event_consumer_marks (stream, durable, stream_created, durable_created, read_up_to) VALUES ($1, $2, $3, $4, $5)
  ON CONFLICT (stream, durable) DO UPDATE SET
    read_up_to = CASE WHEN (event_consumer_marks.stream_created, event_consumer_marks.durable_created) = (EXCLUDED.stream_created, EXCLUDED.durable_created)
                      THEN GREATEST(event_consumer_marks.read_up_to, EXCLUDED.read_up_to) ELSE EXCLUDED.read_up_to END,
    stream_created = EXCLUDED.stream_created, durable_created = EXCLUDED.durable_created, marked_at = now()`;

/**
 * The events the durable will never get: for a new durable, those the stream dropped before it
 * existed; for one that exists, those dropped after what it is known to have read (its own
 * position, or its mark when its filter's last event lies further back). Undefined when none, and
 * for a durable without a mark (made before marks were kept): what it read is not known. Notes the
 * stream's retention on the way (noteRetention).
 */
export async function lostEvents(bus: Bus, pool: Pool, spec: DurableConsumerSpec): Promise<LostEvents | undefined> {
  const info = await consumerInfo(bus, spec);
  const stream = await bus.jsm.streams.info(bus.name(spec.stream));
  // Every start looks at the stream here: what it keeps decides how long records of applied events last.
  noteRetention(bus, stream.config);
  const { state } = stream;
  // A stream that never held an event has first_seq 0; one that dropped every event, last_seq + 1.
  const gone = state.first_seq - 1;
  const lost = (from: number, durableExisted: boolean): LostEvents | undefined =>
    from <= gone ? { durableExisted, from, to: gone, lastSequence: state.last_seq } : undefined;
  if (!info) return lost(1, false);
  const read = await knownRead(pool, stream, info);
  return read === undefined ? undefined : lost(read + 1, true);
}

/**
 * Saves how far the durable has read for sure. `settled`: its start dealt with what the stream had
 * dropped (backfilled, reported, or made the durable after it), so none of it counts again.
 */
export async function markProgress(bus: Bus, pool: Pool, spec: DurableConsumerSpec, settled = false): Promise<void> {
  // The stream first: a consumer found caught up afterwards has read every event of its filter up to that last one.
  const stream = await bus.jsm.streams.info(bus.name(spec.stream));
  const info = await bus.jsm.consumers.info(bus.name(spec.stream), bus.name(spec.durable));
  const { first_seq: first, last_seq: last } = stream.state;
  const read = (await knownRead(pool, stream, info)) ?? readPosition(info);
  // num_pending counts only the events still kept: caught up means so only when none was dropped unread before them.
  const caughtUp = read >= first - 1 && info.num_pending === 0 && info.num_ack_pending === 0;
  const upTo = Math.max(caughtUp ? last : read, settled ? first - 1 : 0);
  await exec(pool, SAVE_MARK, [stream.config.name, info.name, stream.created, info.created, upTo]);
}

/** Marks the durable's progress every `everyMs` while it runs, and once more as it stops (nothing to mark without the bus). */
export function keepMarking(bus: Bus, pool: Pool, spec: DurableConsumerSpec, log: Logger, everyMs = MARK_EVERY_MS) {
  const mark = async () => {
    if (bus.connected) await markProgress(bus, pool, spec).catch((err) => log.debug({ err }, 'could not mark the consumer progress'));
  };
  const timer = setInterval(() => void mark(), everyMs);
  timer.unref();
  return {
    async stop(): Promise<void> {
      clearInterval(timer);
      await Promise.race([mark(), sleep(STOP_MARK_MS, undefined, { ref: false })]);
    },
  };
}

/** How far the durable has surely read: the further of its own position and its mark; undefined without a mark. */
async function knownRead(pool: Pool, stream: StreamInfo, info: ConsumerInfo): Promise<number | undefined> {
  const row = await maybeOne<{ readUpTo: number }>(pool, MARK_OF, [stream.config.name, info.name, stream.created, info.created]);
  return row && Math.max(readPosition(info), row.readUpTo);
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
