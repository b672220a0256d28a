import closeWithGrace from 'close-with-grace';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { z } from 'zod';
import { type Bus, daysToMs, longestRetentionMs, openBus, type StreamSpec } from './bus.ts';
import { ConfigError, loadConfig } from './config.ts';
import { createPool, type Pool } from './db.ts';
import { type ConsumerHandle, purgeProcessedEvents, type Relay, startOutboxRelay } from './events.ts';
import { type HealthCheck, optionalCheck } from './health.ts';
import { purgeIdempotencyKeys } from './idempotency.ts';
import { createLogger } from './logger.ts';
import { type MetricsServer, startMetricsServer } from './metrics.ts';
import { migrate } from './migrate.ts';
import { startTracing, stopTracing } from './tracing.ts';

/** Parses the environment or stops the process with a message naming every bad variable. */
export function configOrExit<S extends z.ZodType>(schema: S, service: string): z.output<S> {
  try {
    return loadConfig(schema);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    process.stderr.write(`${service}: ${err.message}\n`);
    process.exit(78); // EX_CONFIG
  }
}

interface DatabaseServiceConfig {
  LOG_LEVEL: string;
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?: string;
  NATS_URL: string;
  BUS_NAMESPACE: string;
  DATABASE_URL: string;
  DATABASE_POOL_SIZE: number;
  EVENT_RETENTION_DAYS: number;
}

/** The backing parts of a service that owns a database and publishes events. */
export interface Runtime {
  log: Logger;
  pool: Pool;
  bus: Bus;
  relay: Relay;
  checks: Record<string, HealthCheck>;
}

/**
 * The command-line flag that makes a service apply its migrations and exit, without NATS: what the
 * Kubernetes init container runs before the process itself (deploy/k8s).
 */
export const MIGRATE_ONLY_FLAG = '--migrate-only';

/**
 * Logger, pool, migrations, then the bus and the outbox relay. The database is required (the
 * process cannot serve without it); the bus is not: it connects in the background with back-off,
 * and the relay creates the service's stream and starts publishing once it is there. Readiness
 * fails without PostgreSQL and reports the bus as degraded.
 * With `--migrate-only` among the arguments it stops after the migrations and exits 0.
 */
export async function startRuntime(options: {
  service: string;
  config: DatabaseServiceConfig;
  migrationsDir: string;
  stream: StreamSpec;
}): Promise<Runtime> {
  const { config } = options;
  const log = createLogger({ service: options.service, level: config.LOG_LEVEL });
  startTracing({ service: options.service, endpoint: config.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT });
  const pool = createPool(config.DATABASE_URL, config.DATABASE_POOL_SIZE);
  const applied = await migrate(pool, options.migrationsDir, log);
  if (process.argv.includes(MIGRATE_ONLY_FLAG)) {
    log.info({ applied: applied.length }, 'migrations applied; exiting (--migrate-only)');
    await pool.end();
    process.exit(0);
  }
  const retentionMs = daysToMs(config.EVENT_RETENTION_DAYS);
  const bus = openBus({ url: config.NATS_URL, namespace: config.BUS_NAMESPACE, name: options.service, log, retentionMs });
  const relay = startOutboxRelay({ pool, bus, log, stream: options.stream });
  // Idempotency keys older than 24 h no longer answer, records of events the streams no longer keep
  // guard nothing: this keeps both tables from growing for ever. The first purge after an upgrade
  // may outlast a tick: a tick while one runs is skipped.
  let purging = false;
  const purge = setInterval(async () => {
    if (purging) return;
    purging = true;
    await Promise.all([
      purgeIdempotencyKeys(pool).catch((err) => log.warn({ err }, 'idempotency key purge failed')),
      purgeProcessedEvents(pool, longestRetentionMs(bus)).catch((err) => log.warn({ err }, 'processed events purge failed')),
    ]);
    purging = false;
  }, 10 * 60_000);
  purge.unref();
  return { log, pool, bus, relay, checks: runtimeChecks(pool, bus) };
}

/** PostgreSQL is required; the bus only degrades the service (writes go on through the outbox). */
export function runtimeChecks(pool: Pool, bus: Bus): Record<string, HealthCheck> {
  return { postgres: () => pool.query('SELECT 1'), nats: optionalCheck(() => natsCheck(bus)) };
}

export async function natsCheck(bus: Bus): Promise<void> {
  if (!bus.connected) throw new Error('not connected');
  if (bus.nc.isClosed()) throw new Error('connection closed');
  await bus.nc.flush();
}

/**
 * Listens, then on SIGTERM/SIGINT stops accepting, lets in-flight requests finish, stops the
 * consumers and the relay, drains NATS and closes the pool, within the grace period.
 */
export async function serve(options: {
  app: FastifyInstance;
  config: { HOST: string; PORT: number; SHUTDOWN_GRACE_MS: number; METRICS_PORT?: number };
  log: Logger;
  runtime?: Runtime;
  consumers?: ConsumerHandle[];
  onClose?: () => Promise<unknown>;
}): Promise<void> {
  const { app, log, runtime, config } = options;
  let metrics: MetricsServer | undefined;
  closeWithGrace({ delay: options.config.SHUTDOWN_GRACE_MS, logger: log }, async ({ signal, err }) => {
    if (err) log.error({ err }, 'shutting down after an error');
    else log.info({ signal }, 'shutting down');
    await app.close();
    await metrics?.close();
    // A client that hung up does not stop its handler: its transaction still needs the pool.
    await app.handlersSettled();
    await Promise.all((options.consumers ?? []).map((c) => c.stop()));
    await options.onClose?.();
    if (runtime) {
      await runtime.relay.stop();
      await runtime.bus.close();
      await runtime.pool.end();
    }
    // Last: the spans of everything above are exported before the process ends.
    await stopTracing().catch((err) => log.warn({ err }, 'could not export the last spans'));
  });
  await app.listen({ host: config.HOST, port: config.PORT });
  metrics = await startMetricsServer({ host: config.HOST, port: metricsPort(config), log });
  // The runtime is the project's choice (Node 24, see scripts/node-env.sh): say which one runs.
  log.info({ node: process.version, port: config.PORT, metricsPort: metrics.port }, 'started');
}

/** METRICS_PORT, or PORT + 1000 (the gateway's 8080 gives 9080, auth's 3001 gives 4001); any free port when PORT is 0. */
export function metricsPort(config: { PORT: number; METRICS_PORT?: number }): number {
  if (config.METRICS_PORT !== undefined) return config.METRICS_PORT;
  return config.PORT === 0 ? 0 : config.PORT + 1000;
}
