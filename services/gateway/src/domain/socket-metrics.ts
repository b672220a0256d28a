import { metricsRegistry } from '@chat/kit';
import { Counter, Gauge, Histogram } from 'prom-client';

// The real-time socket's Prometheus metrics, in the process's registry (served on the operator
// port with the kit's). Counted where the socket server writes frames; gauges read at scrape time.

const registers = [metricsRegistry];

/** Dispatch frames written to sockets, by dispatch name (the live stream; replays are counted apart). */
export const dispatchesSent = new Counter({
  name: 'gateway_socket_dispatches_total',
  help: 'Dispatch frames written to sockets of this replica, by dispatch name',
  labelNames: ['event'] as const,
  registers,
});

/** Buffered dispatches sent again after a RESUME. */
export const dispatchesReplayed = new Counter({
  name: 'gateway_socket_replayed_dispatches_total',
  help: 'Buffered dispatch frames sent again to resumed sessions',
  registers,
});

/**
 * From the event's publication on JetStream (the stream's timestamp) to its dispatch frame written
 * to a socket: the bus, the audience, the session store and the fan-out together.
 */
export const dispatchLag = new Histogram({
  name: 'gateway_socket_dispatch_lag_seconds',
  help: "From an event's publication on JetStream to its dispatch frame written to a socket",
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
  registers,
});

/** 1 while this replica holds the dispatch lease (reads the streams for every replica), else 0. */
export const dispatchLeaseHeld = new Gauge({
  name: 'gateway_dispatch_lease_held',
  help: 'Whether this replica holds the dispatch lease and reads the streams for every replica (1) or stands by (0)',
  registers,
});

/** IDENTIFYs answered with READY: sessions started on this replica. */
export const identifies = new Counter({
  name: 'gateway_socket_identifies_total',
  help: 'Sessions started on this replica (IDENTIFY answered with READY)',
  registers,
});

/** RESUMEs answered with the replay and RESUMED. */
export const resumes = new Counter({
  name: 'gateway_socket_resumes_total',
  help: 'Sessions resumed on this replica (RESUME answered with the replay and RESUMED)',
  registers,
});

/** RESUMEs answered INVALID_SESSION, by the reason the session could not be resumed. */
export const invalidSessions = new Counter({
  name: 'gateway_socket_invalid_sessions_total',
  help: 'RESUMEs answered with INVALID_SESSION, by reason (unknown, expired, wrong-user, gap, revoked)',
  labelNames: ['reason'] as const,
  registers,
});

/** Sockets closed because their client left more than GATEWAY_MAX_BUFFERED_BYTES unread. */
export const slowClients = new Counter({
  name: 'gateway_socket_slow_clients_total',
  help: 'Sockets closed with 4000 because their client left more than GATEWAY_MAX_BUFFERED_BYTES unread',
  registers,
});

/** What a socket server holds now, read at scrape time. */
export interface SocketCounts {
  /** Sockets open, identified or not. */
  connections(): number;
  /** Sessions whose socket is here (identified or resumed). */
  sessions(): number;
}

const servers = new Set<SocketCounts>();

/** Reports a socket server's connections and sessions until the returned function runs. */
export function watchSockets(counts: SocketCounts): () => void {
  servers.add(counts);
  return () => servers.delete(counts);
}

new Gauge({
  name: 'gateway_socket_connections',
  help: 'WebSocket connections open on this replica, identified or not',
  registers,
  collect() {
    this.set([...servers].reduce((sum, s) => sum + s.connections(), 0));
  },
});

new Gauge({
  name: 'gateway_socket_sessions',
  help: 'Live sessions on this replica: sockets that identified or resumed',
  registers,
  collect() {
    this.set([...servers].reduce((sum, s) => sum + s.sessions(), 0));
  },
});

/** One dispatch frame written to a socket; `publishedAtMs` (the event's JetStream time) when it came from an event. */
export function countDispatchWritten(event: string, publishedAtMs: number | undefined): void {
  dispatchesSent.inc({ event });
  if (publishedAtMs !== undefined) dispatchLag.observe(Math.max(0, Date.now() - publishedAtMs) / 1000);
}
