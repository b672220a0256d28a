import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  createTestDatabase,
  type Platform,
  resolveBacking,
  SERVICES,
  type ServiceProcess,
  startPlatform,
  testNamespace,
} from '@chat/testkit';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    platform: { urls: Record<ServiceProcess, string>; namespace: string; logDir: string };
  }
}

/**
 * Settings the end-to-end tests rely on: a trusted proxy so tests can pick their client IP, and
 * registration without email verification (newUser() expects 201 with a token pair).
 */
export const E2E_ENV: Partial<Record<ServiceProcess, Record<string, string>>> = {
  gateway: { TRUSTED_PROXIES: '127.0.0.1,::1' },
  auth: { EMAIL_VERIFICATION: 'false' },
};

/**
 * Starts every service and the gateway as their own processes on free ports, with fresh databases
 * and a bus namespace of their own, for the whole end-to-end run.
 */
export default async function setup(project: TestProject) {
  const { backing } = await resolveBacking();
  const databases = await Promise.all(SERVICES.map((s) => createTestDatabase(backing.postgresUrl, `e2e_${s}`)));
  const ports = Object.fromEntries(await Promise.all(['gateway', ...SERVICES].map(async (n) => [n, await freePort()]))) as Record<
    ServiceProcess,
    number
  >;
  const namespace = testNamespace('e2e');
  const logDir = join(tmpdir(), `chat-e2e-${namespace}`);
  let platform: Platform;
  try {
    platform = await startPlatform({
      backing,
      ports,
      databases: Object.fromEntries(SERVICES.map((s, i) => [s, databases[i]!.url])) as Record<(typeof SERVICES)[number], string>,
      namespace,
      logDir,
      baseEnv: { PATH: process.env.PATH, HOME: process.env.HOME, NODE_ENV: 'test', LOG_LEVEL: process.env.E2E_LOG_LEVEL ?? 'info' },
      extraEnv: E2E_ENV,
    });
  } catch (err) {
    await Promise.all(databases.map((d) => d.drop()));
    throw err;
  }
  project.provide('platform', { urls: platform.urls, namespace, logDir });
  return async () => {
    await platform.stop();
    await Promise.all(databases.map((d) => d.drop().catch(() => {})));
  };
}

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
