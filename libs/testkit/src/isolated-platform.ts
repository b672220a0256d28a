import { type AddressInfo, createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connectBus, createLogger } from '@chat/kit';
import type { Backing } from './backing.ts';
import { createTestDatabase, testNamespace } from './database.ts';
import { type Platform, type PlatformOptions, SERVICES, type ServiceProcess, startPlatform } from './platform.ts';
import { deleteNamespaceStreams } from './runtime.ts';

/**
 * `count` distinct TCP ports nothing listens on right now. They are all held open until every one is
 * chosen: ports taken one after another can repeat (the first is closed before the next is picked),
 * and a platform whose two processes are handed the same port fails to start.
 */
export async function freePorts(count: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<Server>((resolve, reject) => {
          const server = createServer();
          server.on('error', reject);
          server.listen(0, '127.0.0.1', () => resolve(server));
        }),
    ),
  );
  const ports = servers.map((server) => (server.address() as AddressInfo).port);
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  return ports;
}

/** A TCP port nothing listens on right now. */
export async function freePort(): Promise<number> {
  const [port] = await freePorts(1);
  return port as number;
}

export interface IsolatedPlatform {
  platform: Platform;
  namespace: string;
  logDir: string;
  /** Each service's database URL. */
  databases: PlatformOptions['databases'];
  /** Stops every process, drops the databases and removes the namespace's JetStream streams. */
  stop(): Promise<void>;
}

/**
 * Every service and the gateway as their own processes on free ports, with fresh databases and a
 * bus namespace of their own (labelled `label`), so that a run never touches another's data: what
 * the end-to-end tests and the bench start. Nothing is left behind when the start fails.
 */
export async function startIsolatedPlatform(options: {
  backing: Backing;
  label: string;
  baseEnv: PlatformOptions['baseEnv'];
  extraEnv?: PlatformOptions['extraEnv'];
  /** Default: a directory of its own under the system's temporary directory. */
  logDir?: string;
  /** Runs before any process starts, with the bus namespace (e.g. to declare streams as production does). */
  prepareBus?: (namespace: string) => Promise<void>;
}): Promise<IsolatedPlatform> {
  const databases = await Promise.all(SERVICES.map((s) => createTestDatabase(options.backing.postgresUrl, `${options.label}_${s}`)));
  const dropAll = () => Promise.all(databases.map((d) => d.drop().catch(() => {})));
  const names: ServiceProcess[] = ['gateway', ...SERVICES];
  // One draw for both kinds, so that no service port is also another process's metrics port.
  const drawn = await freePorts(names.length * 2);
  const ports = Object.fromEntries(names.map((n, i) => [n, drawn[i]])) as Record<ServiceProcess, number>;
  const metricsPorts = Object.fromEntries(names.map((n, i) => [n, drawn[names.length + i]])) as Record<ServiceProcess, number>;
  const namespace = testNamespace(options.label);
  const logDir = options.logDir ?? join(tmpdir(), `chat-${options.label}-${namespace}`);
  const databaseUrls = Object.fromEntries(SERVICES.map((s, i) => [s, databases[i]!.url])) as PlatformOptions['databases'];
  try {
    await options.prepareBus?.(namespace);
    const platform = await startPlatform({
      backing: options.backing,
      ports,
      metricsPorts,
      databases: databaseUrls,
      namespace,
      logDir,
      baseEnv: options.baseEnv,
      extraEnv: options.extraEnv,
    });
    return {
      platform,
      namespace,
      logDir,
      databases: databaseUrls,
      stop: async () => {
        await platform.stop();
        await Promise.all([dropAll(), removeStreams(options.backing.natsUrl, namespace)]);
      },
    };
  } catch (err) {
    await Promise.all([dropAll(), removeStreams(options.backing.natsUrl, namespace)]);
    throw err;
  }
}

/** The streams the processes created under `namespace` on the shared NATS. */
async function removeStreams(natsUrl: string, namespace: string): Promise<void> {
  const bus = await connectBus({
    url: natsUrl,
    namespace,
    name: 'testkit-cleanup',
    log: createLogger({ service: 'testkit', level: 'silent' }),
  });
  try {
    await deleteNamespaceStreams(bus, namespace);
  } finally {
    await bus.close();
  }
}
