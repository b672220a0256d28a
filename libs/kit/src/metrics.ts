import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { Bus, DurableConsumerSpec } from './bus.ts';
import type { Pool } from './db.ts';

// The process's Prometheus metrics. One registry per process (a process is one service); what the
// metrics watch (pools, outboxes, consumers) registers itself here while it runs and is read at
// scrape time, so an idle process costs nothing between scrapes. Served on an operator port of its
// own (startMetricsServer), never on the HTTP port the gateway proxies or the public one.

/** Every metric of this process. */
export const metricsRegistry = new Registry();
// The event-loop lag is sampled by a timer; prom-client's default of every 10 ms wakes an idle
// process 100 times a second (about 0.75% of a core each on the development machine). Every
// 100 ms still shows any lag worth an alert.
collectDefaultMetrics({ register: metricsRegistry, eventLoopMonitoringPrecision: 100 });

const LATENCY_BUCKETS = [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const registers = [metricsRegistry];

/** Request rate, errors (by status) and latency per route pattern; `route` is `unmatched` for 404s. */
export const httpRequestDuration = new Histogram({
  name: 'http_request_duration_seconds',
  help: 'HTTP requests by method, route pattern and status, with their latency',
  labelNames: ['method', 'route', 'status_code'] as const,
  buckets: LATENCY_BUCKETS,
  registers,
});

/** NATS request/reply latency per subject and outcome (`ok`, or the status class it failed with). */
export const natsRequestDuration = new Histogram({
  name: 'nats_request_duration_seconds',
  help: 'NATS requests this process made, by logical subject and outcome',
  labelNames: ['subject', 'outcome'] as const,
  buckets: LATENCY_BUCKETS,
  registers,
});

/** NATS requests that got no answer: `no_responders`, `timeout` or `unavailable`. */
export const natsRequestFailures = new Counter({
  name: 'nats_request_failures_total',
  help: 'NATS requests that got no answer, by logical subject and reason',
  labelNames: ['subject', 'reason'] as const,
  registers,
});

/** Events delivered again to a durable consumer (a nak, an ack that never came, a crash). */
export const consumerRedeliveries = new Counter({
  name: 'jetstream_consumer_redeliveries_total',
  help: 'Events a durable consumer received more than once',
  labelNames: ['consumer'] as const,
  registers,
});

/** Set by each consumer as it starts: events it never read that the stream had dropped, with nothing to rebuild them. */
export const consumerLostEvents = new Gauge({
  name: 'jetstream_consumer_lost_events',
  help: 'Stream sequences a durable consumer found dropped before it read them when it last started, not backfilled (a filtered consumer counts other subjects too)',
  labelNames: ['consumer'] as const,
  registers,
});

/** The gateway's rate-tier verdicts: `allowed` or `limited` per tier. */
export const rateLimitDecisions = new Counter({
  name: 'rate_limit_decisions_total',
  help: 'Rate-tier decisions of the gateway, by tier and decision',
  labelNames: ['tier', 'decision'] as const,
  registers,
});

const pools = new Set<Pool>();
const outboxes = new Set<Pool>();
const consumers = new Set<{ bus: Bus; spec: DurableConsumerSpec }>();
const SCRAPE_QUERY_TIMEOUT_MS = 1_000;

/** Reports the pool's connections in use and callers waiting until it ends. */
export function watchPool(pool: Pool): void {
  pools.add(pool);
}

/** Reports the outbox in this pool's database (backlog and oldest unsent age) until the returned function runs. */
export function watchOutbox(pool: Pool): () => void {
  outboxes.add(pool);
  return () => outboxes.delete(pool);
}

/** Reports a durable consumer's pending and unacknowledged counts until the returned function runs. */
export function watchConsumer(bus: Bus, spec: DurableConsumerSpec): () => void {
  const entry = { bus, spec };
  consumers.add(entry);
  return () => consumers.delete(entry);
}

function livePools(): Pool[] {
  for (const pool of pools) if (pool.ended) pools.delete(pool);
  return [...pools];
}

new Gauge({
  name: 'pg_pool_connections_in_use',
  help: 'PostgreSQL connections checked out of the pool',
  registers,
  collect() {
    this.set(livePools().reduce((sum, pool) => sum + pool.totalCount - pool.idleCount, 0));
  },
});

new Gauge({
  name: 'pg_pool_clients_waiting',
  help: 'Callers waiting for a PostgreSQL connection from the pool',
  registers,
  collect() {
    this.set(livePools().reduce((sum, pool) => sum + pool.waitingCount, 0));
  },
});

/** One query per scrape for both outbox gauges, shared by the two collect() calls of that scrape. */
let outboxReading: Promise<{ unsent: number; ageSeconds: number } | undefined> | undefined;
function readOutbox(): Promise<{ unsent: number; ageSeconds: number } | undefined> {
  outboxReading ??= (async () => {
    const live = [...outboxes].filter((pool) => !pool.ended);
    if (live.length === 0) return undefined;
    const rows = await Promise.all(
      live.map((pool) =>
        withTimeout(
          pool.query<{ unsent: number; age: number }>(
            `SELECT count(*)::int AS unsent,
                    COALESCE(EXTRACT(EPOCH FROM clock_timestamp() - min(created_at)), 0)::float8 AS age
               FROM outbox WHERE sent_at IS NULL`,
          ),
        ).then((r) => r.rows[0]),
      ),
    );
    return {
      unsent: rows.reduce((sum, row) => sum + (row?.unsent ?? 0), 0),
      ageSeconds: Math.max(0, ...rows.map((row) => row?.age ?? 0)),
    };
  })()
    .catch(() => undefined)
    .finally(() => {
      setImmediate(() => {
        outboxReading = undefined;
      });
    });
  return outboxReading;
}

new Gauge({
  name: 'outbox_unsent_events',
  help: 'Events committed to the outbox and not yet published to JetStream',
  registers,
  async collect() {
    const reading = await readOutbox();
    if (reading) this.set(reading.unsent);
  },
});

new Gauge({
  name: 'outbox_oldest_unsent_age_seconds',
  help: 'Age of the oldest event in the outbox not yet published (0 when none waits)',
  registers,
  async collect() {
    const reading = await readOutbox();
    if (reading) this.set(reading.ageSeconds);
  },
});

const consumerInfo = () =>
  Promise.all(
    [...consumers].map(async ({ bus, spec }) => {
      const info = await withTimeout(bus.jsm.consumers.info(bus.name(spec.stream), bus.name(spec.durable))).catch(() => undefined);
      return { consumer: spec.durable, info };
    }),
  );

new Gauge({
  name: 'jetstream_consumer_pending_messages',
  help: 'Events in the stream that a durable consumer has not received yet',
  labelNames: ['consumer'] as const,
  registers,
  async collect() {
    this.reset();
    for (const { consumer, info } of await consumerInfo()) if (info) this.set({ consumer }, info.num_pending);
  },
});

new Gauge({
  name: 'jetstream_consumer_ack_pending_messages',
  help: 'Events a durable consumer received and has not acknowledged yet',
  labelNames: ['consumer'] as const,
  registers,
  async collect() {
    this.reset();
    for (const { consumer, info } of await consumerInfo()) if (info) this.set({ consumer }, info.num_ack_pending);
  },
});

function withTimeout<T>(work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('metrics read timed out')), SCRAPE_QUERY_TIMEOUT_MS);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

export interface MetricsServer {
  port: number;
  close(): Promise<void>;
}

/**
 * Serves `GET /metrics` in the Prometheus text format on an operator port of its own: the gateway
 * proxies only `/v1` of the services, and the gateway's own metrics stay off its public port.
 */
export async function startMetricsServer(options: { host: string; port: number; log: Logger }): Promise<MetricsServer> {
  const server: Server = createServer((req, res) => {
    if (req.method !== 'GET' || req.url?.split('?')[0] !== '/metrics') {
      res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'Only GET /metrics is served here' }));
      return;
    }
    metricsRegistry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': metricsRegistry.contentType }).end(text),
      (err) => {
        options.log.error({ err }, 'metrics collection failed');
        res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'Internal server error' }));
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, resolve);
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
