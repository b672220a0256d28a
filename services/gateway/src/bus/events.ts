import { DISPATCH_NAMES, REALTIME_SUBJECTS, SessionRevokedEvent, STREAMS } from '@chat/contracts';
import {
  type Bus,
  type ConsumerHandle,
  endSpan,
  ensureConsumer,
  ensureStream,
  envelopeOf,
  extractContext,
  headerRecord,
  redeliveryDelayMs,
  SpanKind,
  startSpan,
  whenConnected,
  withSpan,
} from '@chat/kit';
import type { Logger } from 'pino';
import type { Dispatcher } from '../domain/dispatch.ts';

/** The streams whose events become dispatches (media's uploads show nowhere by themselves). */
const SOURCES = [STREAMS.auth, STREAMS.guilds, STREAMS.social, STREAMS.music];
const DURABLE = 'gateway-fanout';
const DISPATCH_NAMES_BY_SUBJECT: Record<string, string> = DISPATCH_NAMES;

/**
 * One durable consumer per stream, shared by every replica: whichever replica pulls an event
 * delivers it to every session in Redis, wherever its socket is. One event in flight at a time
 * (max_ack_pending 1) keeps the stream's order for every session; the ack follows the delivery, and
 * a redelivery after a crash is dropped by the event id. A new consumer starts at new events.
 */
export async function consumeForDispatch(bus: Bus, log: Logger, dispatch: Dispatcher): Promise<ConsumerHandle[]> {
  // Started once the bus is up (the gateway serves HTTP without it), retried until it works.
  return Promise.all(
    SOURCES.map((spec) => whenConnected(bus, log, `dispatch from ${spec.name}`, () => consumeStream(bus, log, spec, dispatch))),
  );
}

async function consumeStream(bus: Bus, log: Logger, spec: { name: string; subjects: readonly string[] }, dispatch: Dispatcher) {
  await ensureStream(bus, spec);
  // A replica that dies holding an event: another gets it after the 5 s ack wait.
  await ensureConsumer(bus, { stream: spec.name, durable: DURABLE, deliverNewOnly: true, maxAckPending: 1, ackWaitSeconds: 5 });
  const consumer = await bus.js.consumers.get(bus.name(spec.name), bus.name(DURABLE));
  const messages = await consumer.consume({ max_messages: 64 });
  const clog = log.child({ consumer: `${DURABLE}-${spec.name}` });
  const done = (async () => {
    for await (const msg of messages) {
      const event = envelopeOf(msg.data, bus.logical(msg.subject));
      if (!event) {
        msg.term();
        continue;
      }
      // The dispatch continues the trace of the change that wrote the event (outbox -> JetStream headers).
      const span = startSpan(`${DURABLE} dispatch ${event.subject}`, {
        kind: SpanKind.CONSUMER,
        parent: extractContext(headerRecord(msg.headers)),
        attributes: { 'messaging.message.id': event.id, 'chat.dispatch.name': DISPATCH_NAMES_BY_SUBJECT[event.subject] ?? '' },
      });
      try {
        await withSpan(span, () => dispatch(event, Number(msg.timestampNanos / 1_000_000n)));
        endSpan(span);
        msg.ack();
      } catch (err) {
        endSpan(span, err);
        clog.error({ err, eventId: event.id, subject: event.subject }, 'dispatch failed; will be redelivered');
        msg.nak(redeliveryDelayMs(msg.info.deliveryCount));
      }
    }
  })().catch((err) => clog.error({ err }, 'dispatch consumer stopped'));
  return {
    async stop() {
      await messages.close();
      await done;
    },
  };
}

/**
 * Every replica hears each revocation (a plain subscription to the stream's subject, beside the
 * durable consumer): the sockets it holds for that session close with 4004 at once.
 */
export function listenForRevocations(bus: Bus, log: Logger, revoke: (sessionId: string, userId: string) => Promise<void>): void {
  void whenConnected(bus, log, 'socket revocations', async () => {
    const sub = bus.nc.subscribe(bus.subject(REALTIME_SUBJECTS.sessionRevoked), {
      callback: (err, msg) => {
        if (err) return void log.error({ err }, 'revocation subscription failed');
        const event = envelopeOf(msg.data, REALTIME_SUBJECTS.sessionRevoked);
        const parsed = SessionRevokedEvent.safeParse(event?.data);
        if (!parsed.success) return void log.warn('malformed auth.session.revoked ignored');
        revoke(parsed.data.sessionId, parsed.data.userId).catch((e) => log.error({ err: e }, 'revocation failed'));
      },
    });
    return { stop: async () => sub.unsubscribe() };
  });
}
