import type { RpcContract } from '@chat/contracts';
import { AckPolicy, DeliverPolicy, type JetStreamClient, type JetStreamManager, jetstream, jetstreamManager } from '@nats-io/jetstream';
import {
  connect,
  type Msg,
  type MsgHdrs,
  type NatsConnection,
  nanos,
  headers as natsHeaders,
  RequestError,
  TimeoutError,
} from '@nats-io/transport-node';
import type { Logger } from 'pino';
import type { z } from 'zod';
import { AppError, PUBLIC_MESSAGES } from './errors.ts';
import { natsRequestDuration, natsRequestFailures } from './metrics.ts';
import { contextWithSpan, endSpan, extractContext, SpanKind, startSpan, traceHeaders, tracingEnabled, withSpan } from './tracing.ts';

/**
 * A NATS connection with JetStream, scoped to a namespace (empty in production). It may exist
 * before the connection does: a process starts and serves HTTP without the bus, and `nc`, `js` and
 * `jsm` throw a 503 AppError until the first connection is made.
 */
export interface Bus {
  readonly nc: NatsConnection;
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  /** True while connected (false before the first connection and during a reconnect). */
  readonly connected: boolean;
  /** Resolves on the first connection. */
  readonly ready: Promise<void>;
  /** Calls `listener` with each connect (true) and disconnect (false); returns the unsubscribe. */
  onConnection(listener: (connected: boolean) => void): () => void;
  /** Stops connecting, drains the connection if there is one. */
  close(): Promise<void>;
  /** The real subject of a logical one (`auth.user.updated` -> `<ns>.auth.user.updated`). */
  subject(logical: string): string;
  /** The real name of a logical stream or durable consumer. */
  name(logical: string): string;
  /** The logical subject of a real one. */
  logical(subject: string): string;
  /** How long a stream this process makes keeps an event (its max_age); one made elsewhere may keep its own (longestRetentionMs). */
  readonly retentionMs: number;
  /** The process's logger, for what the bus's helpers find wrong. */
  readonly log: Logger;
}

export const REQUEST_ID_HEADER = 'x-request-id';
const STATUS_HEADER = 'x-status';

export interface BusOptions {
  /** One server's URL, or every server of a cluster, comma-separated. */
  url: string;
  namespace: string;
  name: string;
  log: Logger;
  /** How long the streams this process creates or owns keep an event; default DEFAULT_EVENT_RETENTION_MS. */
  retentionMs?: number;
}

/**
 * EVENT_RETENTION_DAYS' default: a consumer may be down a week and still catch up. Without a limit a
 * stream would grow by every event ever published, until the server's disk limit stops all publishing.
 */
export const DEFAULT_EVENT_RETENTION_MS = daysToMs(7);

export function daysToMs(days: number): number {
  return days * 24 * 60 * 60_000;
}

/** Connects and waits for the connection (tests and scripts: they cannot do without the bus). */
export async function connectBus(options: BusOptions): Promise<Bus> {
  const bus = openBus(options);
  await bus.ready;
  return bus;
}

/** Waits between attempts at the first connection: 250 ms doubling up to 10 s, with jitter. */
export function connectBackoffMs(attempt: number, random = Math.random()): number {
  const base = Math.min(10_000, 250 * 2 ** Math.min(attempt, 10));
  return Math.round(base * (0.8 + 0.4 * random));
}

/**
 * Returns at once and connects in the background with back-off, for ever (until close()). Once
 * connected, the client reconnects by itself; `onConnection` hears of both.
 */
export function openBus(options: BusOptions): Bus {
  const { log } = options;
  let nc: NatsConnection | undefined;
  let js: JetStreamClient | undefined;
  let jsm: JetStreamManager | undefined;
  let connected = false;
  let closed = false;
  let wakeBackoff: (() => void) | undefined;
  const listeners = new Set<(connected: boolean) => void>();
  const setConnected = (value: boolean) => {
    if (connected === value) return;
    connected = value;
    for (const listener of listeners) listener(value);
  };
  const ready = (async () => {
    for (let attempt = 0; !closed; attempt++) {
      try {
        const conn = await connect({
          // A comma-separated list (every server of a cluster): the client fails over between them.
          servers: options.url.split(',').map((url) => url.trim()),
          name: options.name,
          maxReconnectAttempts: -1,
          reconnectTimeWait: 500,
          // A stalled link is noticed within ~15 s rather than the default four minutes.
          pingInterval: 5_000,
          maxPingOut: 2,
          // Otherwise every request and JetStream publish builds two Errors for their stacks (seen as
          // ~6% of guilds' CPU under message posts, in the outbox relay); our errors say what failed.
          noAsyncTraces: true,
        });
        if (closed) {
          await conn.close();
          break;
        }
        [nc, js, jsm] = [conn, jetstream(conn), await jetstreamManager(conn)];
        watchStatus(conn);
        if (attempt > 0) log.info({ attempts: attempt + 1 }, 'connected to NATS');
        setConnected(true);
        return;
      } catch (err) {
        const waitMs = connectBackoffMs(attempt);
        if (attempt === 0 || attempt % 10 === 0) log.warn({ err, waitMs }, 'NATS not reachable; serving without the bus and retrying');
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, waitMs);
          wakeBackoff = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      }
    }
    throw new AppError(503, 'Message bus closed');
  })();
  // Nobody may await ready (a process that only serves HTTP): its rejection on close is expected.
  ready.catch(() => {});

  function watchStatus(conn: NatsConnection) {
    void (async () => {
      for await (const s of conn.status()) {
        if (s.type === 'disconnect' || s.type === 'reconnect') log.warn({ nats: s.type }, 'nats connection status');
        if (s.type === 'disconnect' || s.type === 'staleConnection') setConnected(false);
        if (s.type === 'reconnect') setConnected(true);
      }
    })();
    void conn.closed().then(() => setConnected(false));
  }

  const unavailable = () => new AppError(503, 'Message bus unavailable');
  const ns = options.namespace;
  const prefix = ns ? `${ns}.` : '';
  return {
    get nc() {
      if (!nc) throw unavailable();
      return nc;
    },
    get js() {
      if (!js) throw unavailable();
      return js;
    },
    get jsm() {
      if (!jsm) throw unavailable();
      return jsm;
    },
    get connected() {
      return connected;
    },
    ready,
    onConnection(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    async close() {
      closed = true;
      wakeBackoff?.();
      if (nc && !nc.isClosed()) await nc.drain().catch(() => {});
    },
    subject: (logical) => prefix + logical,
    name: (logical) => (ns ? `${ns}_${logical}` : logical),
    logical: (subject) => (prefix && subject.startsWith(prefix) ? subject.slice(prefix.length) : subject),
    retentionMs: options.retentionMs ?? DEFAULT_EVENT_RETENTION_MS,
    log,
  };
}

/** Something started on the bus that can be stopped (a consumer). */
export interface BusTask {
  stop(): Promise<void>;
}

const START_RETRY_MS = 2_000;

/**
 * Runs `start` once the bus is connected: at once (awaited) when it is, otherwise in the background
 * when it connects. A failed start is logged and retried while connected. The returned task stops
 * what `start` returned, or prevents a start that has not happened yet. A start that fails once
 * `aborted` is set is neither logged nor retried.
 */
export async function whenConnected(
  bus: Bus,
  log: Logger,
  what: string,
  start: () => Promise<BusTask | undefined>,
  aborted?: AbortSignal,
): Promise<BusTask> {
  let started: BusTask | undefined;
  let stopped = false;
  let inFlight: Promise<void> | undefined;
  let retry: NodeJS.Timeout | undefined;
  const attempt = (): Promise<void> => {
    if (started || stopped || aborted?.aborted || !bus.connected) return Promise.resolve();
    inFlight ??= (async () => {
      try {
        started = (await start()) ?? { stop: async () => {} };
        unsubscribe();
      } catch (err) {
        // A start aborted by its stop (a consumer's backfill) is no failure, and is not tried again.
        if (aborted?.aborted) return;
        log.warn({ err, what }, 'could not start on the bus; retrying');
        retry = setTimeout(() => void attempt(), START_RETRY_MS);
        retry.unref();
      } finally {
        inFlight = undefined;
      }
      if (stopped && started) await started.stop();
    })();
    return inFlight;
  };
  const unsubscribe = bus.onConnection((up) => {
    if (up) void attempt();
  });
  await attempt();
  return {
    async stop() {
      stopped = true;
      clearTimeout(retry);
      unsubscribe();
      await inFlight;
      await started?.stop();
      started = undefined;
    },
  };
}

export interface StreamSpec {
  name: string;
  subjects: readonly string[];
}

/** The settings of the platform's streams: a stream made elsewhere (the NATS test cluster) uses them too. */
export function streamConfig(bus: Bus, spec: StreamSpec) {
  return {
    name: bus.name(spec.name),
    subjects: spec.subjects.map((s) => bus.subject(s)),
    // The relay may republish after a crash; Nats-Msg-Id dedupes within this window.
    duplicate_window: nanos(10 * 60_000),
    max_age: nanos(bus.retentionMs),
  };
}

// The longest retention of the streams each bus found made by someone else, and which it warned of.
const foundRetention = new WeakMap<Bus, { longestMs: number; warned: Set<string> }>();

/**
 * How long a record of an applied event must be kept: the bus's retention, or longer when a stream
 * it found keeps events longer (an operator's, set apart from EVENT_RETENTION_DAYS). A record purged
 * sooner would let a redelivered event of that stream be applied twice.
 */
export function longestRetentionMs(bus: Bus): number {
  return Math.max(bus.retentionMs, foundRetention.get(bus)?.longestMs ?? 0);
}

/**
 * Keeps the retention of a stream found already made (by an operator, or by another service), and
 * says once per stream that it is not the configured one. A stream that keeps everything is left
 * out: its owner's ensureStream gives it the bus's retention.
 */
export function noteRetention(bus: Bus, config: { name: string; max_age: number }): void {
  if (config.max_age === 0) return;
  const keptMs = config.max_age / 1_000_000;
  const stream = config.name;
  const found = foundRetention.get(bus) ?? { longestMs: 0, warned: new Set<string>() };
  foundRetention.set(bus, found);
  found.longestMs = Math.max(found.longestMs, keptMs);
  if (keptMs === bus.retentionMs || found.warned.has(stream)) return;
  found.warned.add(stream);
  bus.log.warn(
    { stream, streamRetentionMs: keptMs, eventRetentionMs: bus.retentionMs },
    keptMs > bus.retentionMs
      ? 'the stream keeps events longer than EVENT_RETENTION_DAYS: records of applied events are kept as long as it keeps them'
      : 'the stream keeps events for less than EVENT_RETENTION_DAYS: a consumer away longer than the stream keeps events misses some',
  );
}

/**
 * Creates the stream when missing, with the bus's retention, and gives that retention to an
 * existing stream that keeps everything (made before there was one). A stream with a retention of
 * its own keeps it: an operator's (NACK's in deploy/k8s) is not fought over. Idempotent, so
 * publishers and consumers may all call it.
 */
export async function ensureStream(bus: Bus, spec: StreamSpec): Promise<void> {
  const config = streamConfig(bus, spec);
  const { name } = config;
  const existing = await bus.jsm.streams.info(name).catch(() => undefined);
  if (existing) {
    if (existing.config.max_age === 0) await bus.jsm.streams.update(name, { ...existing.config, max_age: config.max_age });
    else noteRetention(bus, existing.config);
    return;
  }
  try {
    await bus.jsm.streams.add(config);
  } catch (err) {
    // Another replica created it between our info and add.
    await bus.jsm.streams.info(name).catch(() => {
      throw err;
    });
  }
}

/**
 * How long one pull of a consumer waits (`consume({ expires })`). The client expects a heartbeat
 * every half of it, and after a reconnect retries a failed consumer lookup only after a whole one:
 * with the library's 30 s a consumer could sit idle over half a minute after a NATS blip (a
 * revocation not enforced, events late). 5 s costs one pull request per consumer every 5 s.
 */
export const PULL_EXPIRES_MS = 5_000;

/** NATS headers with the request id and, when tracing, the trace context (`traceparent`) to continue. */
export function requestHeaders(requestId?: string, trace: Record<string, string> = {}): MsgHdrs {
  const h = natsHeaders();
  if (requestId) h.set(REQUEST_ID_HEADER, requestId);
  for (const [key, value] of Object.entries(trace)) h.set(key, value);
  return h;
}

/** NATS headers as a record, for the trace propagator; empty when tracing is off (nothing reads them then). */
export function headerRecord(headers: MsgHdrs | undefined): Record<string, string> {
  if (!headers || !tracingEnabled()) return {};
  return Object.fromEntries(headers.keys().map((key) => [key, headers.get(key)]));
}

export interface RpcContext {
  requestId: string | undefined;
  log: Logger;
}

/**
 * Serves `rpc.*` requests in a queue group. The request is parsed by the contract's request schema
 * (400 otherwise) and the handler's answer by its reply schema (so nothing beyond it leaves; a
 * reply that breaks it is a bug, a 500). A thrown AppError travels back with its status, so the
 * caller can rethrow it as the same HTTP answer; other errors travel as a bare 500.
 */
export function serveRpc<Req extends z.ZodType, Rep extends z.ZodType>(
  bus: Bus,
  log: Logger,
  contract: RpcContract<Req, Rep>,
  handler: (data: z.output<Req>, ctx: RpcContext) => Promise<z.input<Rep>>,
): void {
  const { subject } = contract;
  const queue = subject.split('.').slice(0, 2).join('.');
  // Subscribes once connected; the client renews the subscription after each reconnect.
  void whenConnected(bus, log, subject, async () => {
    const sub = bus.nc.subscribe(bus.subject(subject), {
      queue,
      callback: (err, msg) => {
        if (err) {
          log.error({ err, subject }, 'rpc subscription failed');
          return;
        }
        void answer(msg);
      },
    });
    return { stop: async () => sub.unsubscribe() };
  });

  async function answer(msg: Msg) {
    const requestId = msg.headers?.get(REQUEST_ID_HEADER) || undefined;
    const span = startSpan(`rpc ${subject}`, {
      kind: SpanKind.SERVER,
      parent: extractContext(headerRecord(msg.headers)),
      attributes: { 'messaging.system': 'nats', 'messaging.destination.name': subject },
    });
    const reqLog = log.child({ reqId: requestId, rpc: subject, ...(span ? { traceId: span.spanContext().traceId } : {}) });
    const reply = natsHeaders();
    const started = performance.now();
    // Each request served is logged at info, as each HTTP request is: under the caller's request id.
    const answered = (status: number) => reqLog.info({ status, responseTime: performance.now() - started }, 'rpc answered');
    try {
      const parsed = contract.request.safeParse(requestPayload(msg, subject));
      if (!parsed.success) throw new AppError(400, `Invalid ${subject} request: ${parsed.error.issues[0]?.message}`);
      const result = contract.reply.safeParse(await withSpan(span, () => handler(parsed.data, { requestId, log: reqLog })));
      if (!result.success) throw new AppError(500, `${subject} reply breaks its contract`, { cause: result.error });
      reply.set(STATUS_HEADER, '200');
      msg.respond(JSON.stringify(result.data ?? null), { headers: reply });
      answered(200);
      endSpan(span);
    } catch (error) {
      const status = error instanceof AppError ? error.status : 500;
      if (status >= 500) reqLog.error({ err: error }, 'rpc handler failed');
      const message = error instanceof AppError && status < 500 ? error.message : (PUBLIC_MESSAGES[status] ?? 'Internal error');
      reply.set(STATUS_HEADER, String(status));
      msg.respond(JSON.stringify({ error: message }), { headers: reply });
      answered(status);
      span?.setAttribute('rpc.status', status);
      endSpan(span, status >= 500 ? error : undefined);
    }
  }
}

/** The JSON body of a request; a body that is not JSON is the caller's mistake, a 400. */
function requestPayload(msg: Msg, subject: string): unknown {
  if (msg.data.length === 0) return undefined;
  try {
    return msg.json();
  } catch {
    throw new AppError(400, `Invalid ${subject} request: not valid JSON`);
  }
}

/**
 * Asks a service and answers its reply, parsed by the contract's reply schema (a reply that breaks
 * it is a 502: the other side is wrong), or throws an AppError with the status it answered.
 */
export async function requestRpc<Req extends z.ZodType, Rep extends z.ZodType>(
  bus: Bus,
  contract: RpcContract<Req, Rep>,
  data: z.input<Req>,
  options: { requestId?: string | undefined; timeoutMs?: number } = {},
): Promise<z.output<Rep>> {
  const { subject } = contract;
  let msg: Awaited<ReturnType<NatsConnection['request']>>;
  const timer = natsRequestDuration.startTimer({ subject });
  const span = startSpan(`rpc ${subject}`, {
    kind: SpanKind.CLIENT,
    attributes: { 'messaging.system': 'nats', 'messaging.destination.name': subject },
  });
  const failed = (reason: string, err: unknown) => {
    timer({ outcome: reason });
    natsRequestFailures.inc({ subject, reason });
    endSpan(span, err);
  };
  try {
    msg = await bus.nc.request(bus.subject(subject), JSON.stringify(data), {
      timeout: options.timeoutMs ?? 3_000,
      headers: requestHeaders(options.requestId, traceHeaders(contextWithSpan(span))),
    });
  } catch (err) {
    if (err instanceof RequestError && err.isNoResponders()) {
      failed('no_responders', err);
      throw new AppError(503, `No service answers ${subject}`, { cause: err });
    }
    if (err instanceof TimeoutError || (err as Error).cause instanceof TimeoutError) {
      failed('timeout', err);
      throw new AppError(504, `Timed out waiting for ${subject}`, { cause: err });
    }
    failed('unavailable', err);
    throw new AppError(503, 'Message bus unavailable', { cause: err });
  }
  const status = Number(msg.headers?.get(STATUS_HEADER) || 200);
  timer({ outcome: status >= 400 ? `${Math.floor(status / 100)}xx` : 'ok' });
  span?.setAttribute('rpc.status', status);
  endSpan(span, status >= 500 ? new Error(`answered ${status}`) : undefined);
  const body = msg.json<{ error?: string } | null>();
  if (status >= 400) throw new AppError(status, body?.error ?? 'Request failed');
  const reply = contract.reply.safeParse(body);
  if (!reply.success) throw new AppError(502, `${subject} answered a reply that breaks its contract`, { cause: reply.error });
  return reply.data;
}

/** The envelope of every domain event on JetStream. */
export interface EventEnvelope<T = unknown> {
  id: string;
  subject: string;
  occurredAt: string;
  data: T;
}

export interface DurableConsumerSpec {
  stream: string;
  durable: string;
  /** One logical subject filter (NATS 2.9 takes one per consumer), e.g. `auth.user.*`. */
  filter?: string;
  /** Where a new consumer starts: every stored event (the default) or only new ones. */
  deliverNewOnly?: boolean;
  /** Events handed out before an ack; 1 keeps the stream's order across replicas. */
  maxAckPending?: number;
  /** How long an unacked event waits before another pull gets it (30 s by default). */
  ackWaitSeconds?: number;
}

function startOf(spec: DurableConsumerSpec, afterSequence: number | undefined) {
  if (afterSequence !== undefined) return { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: afterSequence + 1 };
  return { deliver_policy: spec.deliverNewOnly ? DeliverPolicy.New : DeliverPolicy.All };
}

/**
 * Creates the durable pull consumer when missing: from the stream's first event (or only new ones,
 * `deliverNewOnly`), or from the one after `afterSequence`.
 */
export async function ensureConsumer(bus: Bus, spec: DurableConsumerSpec, afterSequence?: number): Promise<void> {
  const stream = bus.name(spec.stream);
  const durable = bus.name(spec.durable);
  try {
    await bus.jsm.consumers.info(stream, durable);
  } catch {
    await bus.jsm.consumers.add(stream, {
      durable_name: durable,
      ack_policy: AckPolicy.Explicit,
      ...startOf(spec, afterSequence),
      ack_wait: nanos((spec.ackWaitSeconds ?? 30) * 1000),
      ...(spec.maxAckPending ? { max_ack_pending: spec.maxAckPending } : {}),
      ...(spec.filter ? { filter_subject: bus.subject(spec.filter) } : {}),
    });
  }
}
