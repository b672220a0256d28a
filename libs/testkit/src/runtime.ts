import type { StreamSpec } from '@chat/kit';
import { connectBus, createLogger, createPool, ensureStream, migrate, type Runtime, runtimeChecks, startOutboxRelay } from '@chat/kit';
import { type Backing, liveKitEnv } from './backing.ts';
import { createTestDatabase, testNamespace } from './database.ts';

export interface TestRuntime extends Runtime {
  databaseUrl: string;
  namespace: string;
  /** The environment a service's config schema parses in this test. */
  env: Record<string, string>;
  close(): Promise<void>;
}

/**
 * The backing parts of one service for one test file: its own fresh, migrated database, its own
 * bus namespace, its stream and a running outbox relay, exactly as main wires them.
 */
export async function createTestRuntime(options: {
  service: string;
  migrationsDir: string;
  stream: StreamSpec;
  backing: Backing;
}): Promise<TestRuntime> {
  const database = await createTestDatabase(options.backing.postgresUrl, options.service);
  const namespace = testNamespace(options.service);
  const log = createLogger({ service: options.service, level: process.env.TEST_LOG_LEVEL ?? 'silent' });
  const pool = createPool(database.url, 10);
  await migrate(pool, options.migrationsDir, log);
  const bus = await connectBus({ url: options.backing.natsUrl, namespace, name: `${options.service}-test`, log });
  await ensureStream(bus, options.stream);
  const relay = startOutboxRelay({ pool, bus, log, pollMs: 200 });
  return {
    log,
    pool,
    bus,
    relay,
    checks: runtimeChecks(pool, bus),
    databaseUrl: database.url,
    namespace,
    env: {
      NODE_ENV: 'test',
      LOG_LEVEL: 'silent',
      DATABASE_URL: database.url,
      NATS_URL: options.backing.natsUrl,
      BUS_NAMESPACE: namespace,
      ...liveKitEnv(options.backing.livekit),
    },
    async close() {
      await relay.stop();
      await deleteNamespaceStreams(bus, namespace);
      await bus.close();
      await pool.end();
      await database.drop().catch(() => {});
    },
  };
}

/** Removes the streams a test namespace created, so test runs leave NATS as they found it. */
export async function deleteNamespaceStreams(bus: Runtime['bus'], namespace: string): Promise<void> {
  const names: string[] = [];
  try {
    // Every page: one NATS is shared by many test runs, so there may be more streams than one page holds.
    for await (const name of bus.jsm.streams.names()) if (name.startsWith(`${namespace}_`)) names.push(name);
  } catch {}
  await Promise.all(names.map((n) => bus.jsm.streams.delete(n).catch(() => false)));
}
