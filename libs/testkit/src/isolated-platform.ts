import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Backing } from './backing.ts';
import { createTestDatabase, testNamespace } from './database.ts';
import { type Platform, type PlatformOptions, SERVICES, type ServiceProcess, startPlatform } from './platform.ts';

/** A TCP port nothing listens on right now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

export interface IsolatedPlatform {
  platform: Platform;
  namespace: string;
  logDir: string;
  /** Stops every process and drops the databases. */
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
}): Promise<IsolatedPlatform> {
  const databases = await Promise.all(SERVICES.map((s) => createTestDatabase(options.backing.postgresUrl, `${options.label}_${s}`)));
  const dropAll = () => Promise.all(databases.map((d) => d.drop().catch(() => {})));
  const names: ServiceProcess[] = ['gateway', ...SERVICES];
  const ports = Object.fromEntries(await Promise.all(names.map(async (n) => [n, await freePort()]))) as Record<ServiceProcess, number>;
  const metricsPorts = Object.fromEntries(await Promise.all(names.map(async (n) => [n, await freePort()]))) as Record<
    ServiceProcess,
    number
  >;
  const namespace = testNamespace(options.label);
  const logDir = options.logDir ?? join(tmpdir(), `chat-${options.label}-${namespace}`);
  try {
    const platform = await startPlatform({
      backing: options.backing,
      ports,
      metricsPorts,
      databases: Object.fromEntries(SERVICES.map((s, i) => [s, databases[i]!.url])) as PlatformOptions['databases'],
      namespace,
      logDir,
      baseEnv: options.baseEnv,
      extraEnv: options.extraEnv,
    });
    return {
      platform,
      namespace,
      logDir,
      stop: async () => {
        await platform.stop();
        await dropAll();
      },
    };
  } catch (err) {
    await dropAll();
    throw err;
  }
}
