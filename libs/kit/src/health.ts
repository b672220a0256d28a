import type { FastifyInstance } from 'fastify';

/** A readiness check of one backing part: resolves when it answers. */
export type HealthCheck = () => Promise<unknown>;

const CHECK_TIMEOUT_MS = 1_000;

/** Runs each check with a timeout and reports `ok` or the reason it failed. */
export async function runChecks(checks: Record<string, HealthCheck>): Promise<{ ready: boolean; checks: Record<string, string> }> {
  const results = await Promise.all(
    Object.entries(checks).map(async ([name, check]) => {
      try {
        await withTimeout(check(), CHECK_TIMEOUT_MS);
        return [name, 'ok'] as const;
      } catch (err) {
        return [name, `unavailable: ${(err as Error).message}`] as const;
      }
    }),
  );
  return { ready: results.every(([, r]) => r === 'ok'), checks: Object.fromEntries(results) };
}

/**
 * `/health/live` answers while the process runs; `/health/ready` answers 200 only when every
 * backing part of this service answers. Both stay off /v1: the gateway does not proxy them.
 */
export function registerHealth(app: FastifyInstance, checks: Record<string, HealthCheck>): void {
  let shuttingDown = false;
  app.addHook('onClose', async () => {
    shuttingDown = true;
  });
  app.get('/health/live', async () => ({ status: 'ok' }));
  app.get('/health/ready', async (_req, reply) => {
    const result = await runChecks(checks);
    const ready = result.ready && !shuttingDown;
    return reply.code(ready ? 200 : 503).send({ status: ready ? 'ready' : 'unavailable', checks: result.checks });
  });
}

export function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
