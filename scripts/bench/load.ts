import autocannon, { type Request } from 'autocannon';
import { perSecond } from './rates.ts';
import type { BenchRequest, ScenarioLoad } from './scenario.ts';

export interface LoadSettings {
  connections: number;
  durationSeconds: number;
  /** A short run first, not recorded: connection pools fill and the JIT warms up. */
  warmupSeconds: number;
  /** The X-Forwarded-For of the next request. */
  nextClientIp: () => string;
}

/** What one measurement found. Latencies in milliseconds. */
export interface Figures {
  requestsPerSecond: number;
  p50: number;
  p99: number;
  /** Completed requests. */
  requests: number;
  /** Answers whose status was not the expected one: a result with any is suspect. */
  unexpected: number;
  /** Connection errors and timeouts. */
  errors: number;
  statuses: Record<string, number>;
}

/** Sends `load` to `baseUrl` from `connections` connections for the duration, each request from its own client IP. */
export async function measure(baseUrl: string, load: ScenarioLoad, settings: LoadSettings): Promise<Figures> {
  const requests = load.requests.map((r) => toAutocannon(r, settings.nextClientIp));
  const options = { url: baseUrl, connections: settings.connections, pipelining: 1, timeout: 10, requests };
  if (settings.warmupSeconds > 0) await autocannon({ ...options, duration: settings.warmupSeconds });
  const result = await autocannon({ ...options, duration: settings.durationSeconds });
  const statuses = Object.fromEntries(Object.entries(result.statusCodeStats).map(([status, { count }]) => [status, count]));
  const expected = String(load.expectStatus ?? 200);
  const answered = Object.values(statuses).reduce((sum, n) => sum + n, 0);
  return {
    requestsPerSecond: perSecond(result.requests.average),
    p50: result.latency.p50,
    p99: result.latency.p99,
    requests: answered,
    unexpected: answered - (statuses[expected] ?? 0),
    errors: result.errors + result.timeouts,
    statuses,
  };
}

function toAutocannon(request: BenchRequest, nextClientIp: () => string): Request {
  const json = request.body !== undefined && typeof request.body !== 'string' && !Buffer.isBuffer(request.body);
  const headers: Record<string, string> = { ...(json ? { 'content-type': 'application/json' } : {}), ...request.headers };
  const nextTarget = spreadOver(request.spread ?? []);
  return {
    method: request.method,
    path: request.path,
    headers,
    ...(request.body === undefined ? {} : { body: encoded(request.body) }),
    setupRequest: (req) => {
      req.headers = { ...headers, 'x-forwarded-for': nextClientIp() };
      return nextTarget ? { ...req, ...nextTarget() } : req;
    },
  };
}

function encoded(body: unknown): string | Buffer {
  return typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body);
}

/** The next of the targets on each call (bodies encoded once), or undefined when there are none. */
function spreadOver(targets: { path: string; body?: unknown }[]): (() => { path: string; body?: string | Buffer }) | undefined {
  if (targets.length === 0) return undefined;
  const encodedTargets = targets.map((t) => ({ path: t.path, ...(t.body === undefined ? {} : { body: encoded(t.body) }) }));
  let next = 0;
  return () => encodedTargets[next++ % encodedTargets.length] as { path: string; body?: string | Buffer };
}
