import type { FastifyInstance } from 'fastify';

/**
 * A readiness check of one backing part: resolves when it answers. An optional one (made with
 * optionalCheck) only degrades the process: it serves without that part.
 */
export type HealthCheck = (() => Promise<unknown>) & { optional?: true };

/** A check whose failure leaves the process serving, `degraded` rather than not ready (the bus, Redis). */
export function optionalCheck(check: () => Promise<unknown>): HealthCheck {
  return Object.assign(() => check(), { optional: true as const });
}

export type Readiness = 'ready' | 'degraded' | 'unavailable';

const CHECK_TIMEOUT_MS = 1_000;

/**
 * Runs each check with a timeout. `unavailable` when a required check fails, `degraded` when only
 * optional ones do; `checks` names each reason, for operators and logs only.
 */
export async function runChecks(checks: Record<string, HealthCheck>): Promise<{ status: Readiness; checks: Record<string, string> }> {
  const results = await Promise.all(
    Object.entries(checks).map(async ([name, check]) => {
      try {
        await withTimeout(check(), CHECK_TIMEOUT_MS);
        return { name, ok: true, optional: check.optional === true, text: 'ok' };
      } catch (err) {
        return { name, ok: false, optional: check.optional === true, text: `unavailable: ${(err as Error).message}` };
      }
    }),
  );
  const failed = results.filter((r) => !r.ok);
  const status: Readiness = failed.some((r) => !r.optional) ? 'unavailable' : failed.length ? 'degraded' : 'ready';
  return { status, checks: Object.fromEntries(results.map((r) => [r.name, r.text])) };
}

/**
 * `/health/live` answers while the process runs; `/health/ready` answers 200 while the process can
 * serve (`ready`, or `degraded` when an optional part such as the bus is away) and 503 when a part
 * it cannot serve without fails. Both stay off /v1: the gateway does not proxy them. They name each
 * check's reason: they are for the orchestrator and operators, not for clients.
 */
export function registerHealth(app: FastifyInstance, checks: Record<string, HealthCheck>): void {
  let shuttingDown = false;
  app.addHook('onClose', async () => {
    shuttingDown = true;
  });
  app.get('/health/live', async () => ({ status: 'ok' }));
  app.get('/health/ready', async (_req, reply) => {
    const result = await runChecks(checks);
    const status: Readiness = shuttingDown ? 'unavailable' : result.status;
    return reply.code(status === 'unavailable' ? 503 : 200).send({ status, checks: result.checks });
  });
}

export function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
