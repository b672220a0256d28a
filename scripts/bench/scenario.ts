import type { ServiceProcess } from '@chat/testkit';
import type { Reference } from './references.ts';

/** One request of a scenario's load; every connection sends the list in order, again and again. */
export interface BenchRequest {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  headers?: Record<string, string>;
  /** Sent as JSON (content-type set) unless it is already a string or a Buffer (uploads), sent as is. */
  body?: unknown;
  /**
   * Targets to take in turn instead of `path` and `body`, one per send across all connections, so
   * that concurrent requests spread over them (64 channels rather than one busy channel).
   */
  spread?: { path: string; body?: unknown }[];
}

/** What a scenario sends, once its setup has prepared the data. */
export interface ScenarioLoad {
  requests: BenchRequest[];
  /** The status every answer must have (default 200); any other is counted and flags the result. */
  expectStatus?: number;
  /** The payload each request carries (uploads): the table then shows MiB/s too. */
  bytesPerRequest?: number;
}

/** Returned by a setup when the scenario cannot run on this platform yet (the route is not built). */
export interface Skip {
  skip: string;
}

export interface Scenario {
  /** Unique, `<area>.<what>`: `gateway.health`, `users.me`, `messages.post`. */
  name: string;
  summary: string;
  /**
   * Also send the same load straight to this service, bypassing the gateway: the table then shows
   * the gateway's throughput as a ratio of the service's own (the cost of the edge).
   */
  direct?: Exclude<ServiceProcess, 'gateway'>;
  /** Connections when this scenario must differ from the run's (CPU-bound logins); the baseline is measured at it too. */
  connections?: number;
  /**
   * The building block the scenario is made of, measured alone right after the scenario's rows at
   * the same concurrency (references.ts): the table shows each row's req/s over it.
   */
  reference?: Reference;
  /** Prepares data through `ctx` (not measured) and returns the load, or a reason to skip. */
  setup(ctx: BenchContext): Promise<ScenarioLoad | Skip>;
}

export interface BenchUser {
  id: string;
  username: string;
  password: string;
  token: string;
}

export interface ApiAnswer {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: setup steps read whatever the answer holds
  body: any;
}

/** What a scenario's setup gets: the platform's URLs and a client for preparing data. */
export interface BenchContext {
  urls: Record<ServiceProcess, string>;
  /** Each service's database URL, for a setup that seeds more than an API could in reasonable time. */
  databases: Record<Exclude<ServiceProcess, 'gateway'>, string>;
  /** A JSON call (to the gateway unless `base` says otherwise), from a client IP of its own. */
  api(method: BenchRequest['method'], path: string, options?: { token?: string; body?: unknown; base?: string }): Promise<ApiAnswer>;
  /** Registers a fresh user through the gateway (email verification is off on the bench platform). */
  registerUser(prefix?: string): Promise<BenchUser>;
}

/** Gives a scenario its type; any export of a file in scenarios/ made with it is registered. */
export function defineScenario(scenario: Scenario): Scenario {
  return scenario;
}

export function isSkip(value: ScenarioLoad | Skip): value is Skip {
  return 'skip' in value;
}
