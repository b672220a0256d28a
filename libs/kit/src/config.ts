import { z } from 'zod';

/** Raised when the environment does not satisfy a service's config schema; names every bad variable. */
export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

/**
 * Validates the environment once, at boot. This is the only place in the system that reads
 * `process.env`; everything else receives the parsed, typed config.
 */
export function loadConfig<S extends z.ZodType>(schema: S, env: Record<string, string | undefined> = process.env): z.output<S> {
  // `PORT=` in an env file means "not set": without this, coercion would turn it into port 0.
  const given = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== ''));
  const result = schema.safeParse(given);
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => {
    const name = issue.path.join('.') || '(root)';
    const value = given[name];
    return value === undefined ? `${name}: missing (${issue.message})` : `${name}: ${issue.message}`;
  });
  throw new ConfigError(problems);
}

const bool = z.enum(['true', 'false', '1', '0']).transform((v) => v === 'true' || v === '1');

/**
 * One server of NATS_URL as the nats client takes it: `nats://` or `tls://` with a host (user and
 * password allowed), or a bare `host:port` / `host`. Anything else would only fail in the
 * background, leaving the process running without the bus.
 */
function isNatsServer(server: string): boolean {
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(server)) return /^(\[[0-9a-f:.]+\]|[a-z0-9.-]+)(:\d{1,5})?$/i.test(server);
  try {
    const url = new URL(server);
    return (url.protocol === 'nats:' || url.protocol === 'tls:') && url.hostname !== '';
  } catch {
    return false;
  }
}

/** Environment helpers shared by every service's schema. */
export const env = {
  port: (fallback: number) => z.coerce.number().int().min(0).max(65535).default(fallback),
  bool: (fallback: boolean) => bool.default(fallback),
  url: () => z.url(),
  /**
   * A whole number of at least `min` (default 0: no count, size or duration is negative). Give a
   * setting for which 0 means nothing (a timeout, an interval, a lifetime, a limit) `min` 1 or more.
   */
  int: (fallback: number, min = 0) => z.coerce.number().int().min(min).default(fallback),
  /** NATS_URL: one server, or several comma-separated (a cluster), each as isNatsServer takes it. */
  natsServers: (fallback: string) =>
    z
      .string()
      .refine(
        (v) => v.split(',').every((server) => isNatsServer(server.trim())),
        'must be nats:// or tls:// URLs or host:port, comma-separated',
      )
      .default(fallback),
  list: () =>
    z
      .string()
      .default('')
      .transform((v) =>
        v
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean),
      ),
};

/** Variables every service reads. */
export const baseConfig = z.object({
  NODE_ENV: z.enum(['development', 'test', 'production']).default('development'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  HOST: z.string().default('127.0.0.1'),
  /** One NATS server, or every server of a JetStream cluster comma-separated (the client fails over). */
  NATS_URL: env.natsServers('nats://127.0.0.1:4222'),
  /** Prefix of every subject and stream name, so that several platforms can share one NATS (tests). */
  BUS_NAMESPACE: z
    .string()
    .regex(/^[a-z0-9_-]*$/, 'only a-z, 0-9, _ and -')
    .default(''),
  /**
   * Days a JetStream stream keeps an event, and a consumer its record of having applied one: a
   * consumer down longer misses what expired. The same on every process (each sets it on the streams
   * it creates). At least a day: a restarted process replays the revocations of the last access-token
   * lifetime from the stream (it warns when ACCESS_TOKEN_MAX_TTL_SECONDS is longer).
   */
  EVENT_RETENTION_DAYS: z.coerce.number().int().min(1).default(7),
  /**
   * How long a stopping process may take. Longer than the HTTP idle drain (IDLE_DRAIN_MS of the
   * kit's http.ts, 3 s) plus the longest request: see createHttpApp.
   */
  SHUTDOWN_GRACE_MS: env.int(10_000, 1),
  /** The operator port of GET /metrics (Prometheus); default PORT + 1000, or any free port when PORT is 0. */
  METRICS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  /** OTLP/HTTP traces endpoint (`http://collector:4318/v1/traces`); tracing is off without it. */
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: z.url().optional(),
});

/** Variables of a service that owns a PostgreSQL database. */
export const databaseConfig = z.object({
  DATABASE_URL: z.string().regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL'),
  DATABASE_POOL_SIZE: env.int(10, 1),
});

/** Variables of a service that verifies access tokens itself. */
export const tokenConfig = z.object({
  AUTH_JWKS_URL: z.url().default('http://127.0.0.1:3001/v1/auth/jwks'),
  JWT_ISSUER: z.string().default('chat-auth'),
  JWT_AUDIENCE: z.string().default('chat-api'),
  JWT_ALGORITHM: z.enum(['EdDSA', 'ES256']).default('EdDSA'),
  /**
   * The longest access-token lifetime auth may issue (its ACCESS_TOKEN_TTL_SECONDS): how long a
   * revoked session is remembered, since a token of it may be presented until then.
   */
  ACCESS_TOKEN_MAX_TTL_SECONDS: env.int(15 * 60, 1),
});
