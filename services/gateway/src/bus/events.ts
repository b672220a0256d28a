import { setTimeout as wait } from 'node:timers/promises';
import { STREAMS } from '@chat/contracts';
import {
  type Bus,
  type ConsumerHandle,
  type EventEnvelope,
  endSpan,
  ensureStream,
  envelopeOf,
  extractContext,
  headerRecord,
  PULL_EXPIRES_MS,
  redeliveryDelayMs,
  SpanKind,
  type StreamSpec,
  startSpan,
  withSpan,
} from '@chat/kit';
import { type ConsumerMessages, DeliverPolicy, type JsMsg } from '@nats-io/jetstream';
import type { Logger } from 'pino';
import { dispatchNameOf, type EventSource, FencedOff, type Sent } from '../domain/dispatch.ts';
import type { DispatchLease, Fence } from '../domain/dispatch-lease.ts';
import { DUPLICATE, FENCED_OFF } from '../domain/session-store.ts';
import { dispatchLeaseHeld } from '../domain/socket-metrics.ts';

/** The streams whose events become dispatches (media's uploads show nowhere by themselves). */
const SOURCES = [STREAMS.auth, STREAMS.guilds, STREAMS.social, STREAMS.music];
/** The durable consumer every replica shared before the lease: removed when a tenure starts. */
const SHARED_DURABLE = 'gateway-fanout';
// How often a tenure saves its positions: what a successor reads twice (and drops by event id).
const SAVE_EVERY_MS = 200;
const BATCH = 256;
// Deliveries of one stream sent and not answered yet, at most.
const IN_FLIGHT = 64;

export interface DispatchReaderDeps {
  bus: Bus;
  log: Logger;
  lease: DispatchLease;
  dispatch: (event: EventEnvelope, source: EventSource) => Promise<void>;
  /**
   * Sends an event's delivery without waiting for the answers of those before it (domain/dispatch.ts);
   * undefined: the event is dispatched on its own. Without it, every event is.
   */
  send?: (event: EventEnvelope, source: EventSource & { after?: string }) => Promise<Sent | undefined>;
}

/**
 * Turns every stream's events into dispatches, in each stream's order, on whichever replica holds
 * the dispatch lease (domain/dispatch-lease.ts); the others stand by and ask for it every third of
 * its lifetime. The holder reads each stream with an ordered consumer of its own: events come in
 * batches and need no ack, where a consumer shared by every replica had to keep one event in flight
 * (and an ack per event) to keep the order. Each delivery is fenced by the lease, so a holder that
 * lost it delivers nothing more; a successor starts after the saved positions.
 *
 * Every replica marks where the streams start as soon as the bus is there, before it asks for the
 * lease: an event published after a replica started is read, whoever reads it and however long
 * the first holder takes to start.
 */
export function dispatchFromStreams(deps: DispatchReaderDeps): ConsumerHandle {
  const log = deps.log.child({ reader: 'dispatch' });
  const standby = new AbortController();
  let tenure: AbortController | undefined;
  const done = (async () => {
    await Promise.race([deps.bus.ready, new Promise((resolve) => standby.signal.addEventListener('abort', resolve))]);
    let marked = false;
    while (!standby.signal.aborted) {
      if (deps.bus.connected) {
        marked ||= await markStarts(deps).then(
          () => true,
          (err) => {
            log.warn({ err }, 'could not mark where the streams start; retrying');
            return false;
          },
        );
        const fence = marked ? await deps.lease.acquire().catch(() => undefined) : undefined;
        // Stopped while it asked: nothing would end this tenure, and the stop would wait for ever.
        if (fence && standby.signal.aborted) await deps.lease.release(fence).catch(() => {});
        else if (fence) {
          tenure = new AbortController();
          await lead(deps, log, fence, tenure);
          tenure = undefined;
        }
      }
      await sleep(deps.lease.ttlMs / 3, standby.signal);
    }
  })();
  return {
    async stop() {
      standby.abort();
      tenure?.abort();
      await done;
    },
  };
}

async function markStarts(deps: DispatchReaderDeps): Promise<void> {
  for (const spec of SOURCES) await startOf(deps, spec);
}

/**
 * Where reading a stream starts: after the saved position; the first time, after what the shared
 * consumer of the earlier gateways acknowledged (an upgrade loses nothing), or after the stream's
 * last event.
 */
async function startOf(deps: DispatchReaderDeps, spec: StreamSpec): Promise<{ stream: string; position: number }> {
  const { bus, lease } = deps;
  await ensureStream(bus, spec);
  const stream = bus.name(spec.name);
  const latest = (await bus.jsm.streams.info(stream)).state.last_seq;
  const shared = await bus.jsm.consumers.info(stream, bus.name(SHARED_DURABLE)).catch(() => undefined);
  const start = shared ? Math.min(shared.ack_floor.stream_seq, latest) : latest;
  return { stream, position: await lease.position(stream, { start, latest }) };
}

/** One tenure: every stream read until the lease is lost, a stream fails, or the replica stops; then the lease is given up. */
async function lead(deps: DispatchReaderDeps, log: Logger, fence: Fence, tenure: AbortController): Promise<void> {
  log.info('holding the dispatch lease');
  dispatchLeaseHeld.set(1);
  const renewal = setInterval(() => {
    deps.lease.renew(fence).then(
      (held) => held || tenure.abort(),
      () => tenure.abort(),
    );
  }, deps.lease.ttlMs / 3);
  try {
    await Promise.all(
      SOURCES.map((spec) =>
        readStream(deps, log, spec, fence, tenure).catch((err) => {
          log.error({ err, stream: spec.name }, 'dispatch reader stopped; giving the lease up');
          tenure.abort();
        }),
      ),
    );
  } finally {
    clearInterval(renewal);
    dispatchLeaseHeld.set(0);
    await deps.lease.release(fence).catch(() => {});
    log.info('gave the dispatch lease up');
  }
}

async function readStream(deps: DispatchReaderDeps, log: Logger, spec: StreamSpec, fence: Fence, tenure: AbortController) {
  const { bus, lease } = deps;
  let { stream, position } = await startOf(deps, spec);
  // Its position is taken over: the earlier gateways' shared consumer is not needed any more.
  await bus.jsm.consumers.delete(stream, bus.name(SHARED_DURABLE)).catch(() => {});
  const consumer = await bus.js.consumers.get(stream, { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: position + 1 });
  // A pull that is lost shows as missed heartbeats (every half of `expires`), and the consumer is made again.
  const messages = await consumer.consume({ max_messages: BATCH, expires: PULL_EXPIRES_MS });
  void logTrouble(messages, log.child({ stream }));
  const close = () => void messages.close();
  if (tenure.signal.aborted) close();
  tenure.signal.addEventListener('abort', close, { once: true });
  let saved = position;
  const save = async () => {
    if (position === saved) return;
    const at = position;
    if (await lease.savePosition(fence, stream, at)) saved = at;
    else tenure.abort();
  };
  const saving = setInterval(() => void save().catch(() => {}), SAVE_EVERY_MS);
  const inOrder = orderedDispatch(deps, log, fence, tenure, (seq) => {
    position = seq;
  });
  try {
    for await (const msg of messages) {
      await inOrder.take(msg);
      if (tenure.signal.aborted) break;
    }
    if (!tenure.signal.aborted) throw new Error('the ordered consumer ended by itself');
  } finally {
    await inOrder.answered();
    clearInterval(saving);
    tenure.signal.removeEventListener('abort', close);
    await save().catch(() => {});
  }
}

/** What an operator should see of a stream reader's consumer: the library recovers from each by itself. */
const TROUBLE = new Set(['heartbeats_missed', 'reset', 'stream_not_found', 'consumer_not_found', 'consumer_deleted', 'no_responders']);

async function logTrouble(messages: ConsumerMessages, log: Logger): Promise<void> {
  for await (const status of messages.status()) {
    if (TROUBLE.has(status.type)) log.warn({ status }, 'dispatch reader: consumer trouble');
  }
}

/**
 * A stream's events dispatched in order, their deliveries pipelined: each is sent as soon as the one
 * before it was sent, naming it (`after`), and the store refuses it unless that one landed. Answers
 * are taken in order, and an event whose delivery did not land (a stale audience, a lost link, a
 * predecessor that had not landed) is dispatched again on its own, in its place: what lands is what
 * dispatching one event at a time would deliver, in the same order, with one Redis round trip for
 * many events instead of one each. An event that send leaves to dispatch waits until everything
 * before it is answered. `done` gets the sequence of each event dispatched, in order.
 */
function orderedDispatch(deps: DispatchReaderDeps, log: Logger, fence: Fence, tenure: AbortController, done: (seq: number) => void) {
  const inFlight: Promise<void>[] = [];
  let last: Promise<void> = Promise.resolve();
  let after: string | undefined;

  async function take(msg: JsMsg): Promise<void> {
    if (inFlight.length >= IN_FLIGHT) await inFlight[0];
    // Nothing in flight: the last mark is answered, no need to name it.
    if (inFlight.length === 0) after = undefined;
    const event = envelopeOf(msg.data, deps.bus.logical(msg.subject));
    if (!event) log.error({ seq: msg.seq, subject: msg.subject }, 'not an event envelope; skipped');
    const source = { publishedAtMs: Number(msg.timestampNanos / 1_000_000n), fence };
    const sent = event && deps.send ? await sendTraced(deps.send, msg, event, { ...source, after }) : undefined;
    if (event && !sent) {
      await last;
      await dispatchOne(deps, log, msg, event, source, tenure);
      if (!tenure.signal.aborted) done(msg.seq);
      return;
    }
    if (sent?.mark) after = sent.mark;
    const landed = sent ? sent.outcome.then(landing, () => 'failed' as const) : Promise.resolve('landed' as const);
    const answered = last
      .then(async () => {
        const verdict = await landed;
        if (verdict === 'fenced off') return void tenure.abort();
        if (verdict === 'failed' && event) await dispatchOne(deps, log, msg, event, source, tenure);
        if (!tenure.signal.aborted) done(msg.seq);
      })
      // Not the shifted promise itself: finally would wait for it, that is for itself.
      .finally(() => void inFlight.shift());
    inFlight.push(answered);
    last = answered;
  }

  return { take, answered: () => last };
}

function landing(outcome: number): 'landed' | 'fenced off' | 'failed' {
  if (outcome >= 0 || outcome === DUPLICATE) return 'landed';
  return outcome === FENCED_OFF ? 'fenced off' : 'failed';
}

/** A send that fails before its delivery leaves (an audience it could not ask) counts as sent and not landed: those after it wait. */
async function sendTraced(
  send: NonNullable<DispatchReaderDeps['send']>,
  msg: JsMsg,
  event: EventEnvelope,
  source: EventSource & { after?: string },
) {
  const span = dispatchSpan(msg, event);
  let sent: Sent | undefined;
  try {
    sent = await withSpan(span, () => send(event, source));
  } catch (err) {
    sent = { mark: event.id, outcome: Promise.reject(err) };
  }
  if (!sent) endSpan(span);
  else
    sent.outcome.then(
      () => endSpan(span),
      (err) => endSpan(span, err),
    );
  return sent;
}

/** The dispatch continues the trace of the change that wrote the event (outbox -> JetStream headers). */
function dispatchSpan(msg: JsMsg, event: EventEnvelope) {
  return startSpan(`gateway dispatch ${event.subject}`, {
    kind: SpanKind.CONSUMER,
    parent: extractContext(headerRecord(msg.headers)),
    attributes: { 'messaging.message.id': event.id, 'chat.dispatch.name': dispatchNameOf(event.subject) ?? '' },
  });
}

/** Dispatches one event, again and again while it fails (the next must not overtake it), until done or the tenure ends. */
async function dispatchOne(
  deps: DispatchReaderDeps,
  log: Logger,
  msg: JsMsg,
  event: EventEnvelope,
  source: EventSource,
  tenure: AbortController,
) {
  for (let attempt = 1; !tenure.signal.aborted; attempt++) {
    const span = dispatchSpan(msg, event);
    try {
      await withSpan(span, () => deps.dispatch(event, source));
      return endSpan(span);
    } catch (err) {
      endSpan(span, err);
      if (err instanceof FencedOff) return tenure.abort();
      log.error({ err, eventId: event.id, subject: event.subject, attempt }, 'dispatch failed; trying again');
      await sleep(redeliveryDelayMs(attempt), tenure.signal);
    }
  }
}

/** Waits `ms`, or less when `signal` aborts. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return wait(ms, undefined, { signal }).catch(() => {});
}
