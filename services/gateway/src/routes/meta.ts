import { ALL_ROUTES, buildAsyncApi, buildOpenApi, gatewayRoutes, type HealthReport as HealthReportSchema } from '@chat/contracts';
import { type HealthCheck, route, runChecks } from '@chat/kit';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { z } from 'zod';
import type { GatewayConfig } from '../config.ts';
import { upstreamUrls } from '../domain/upstreams.ts';
import { docsPage } from './docs-page.ts';

const READY_TIMEOUT_MS = 800;

/** /v1/health, /v1/openapi.json, /v1/asyncapi.json and /v1/docs: the gateway's own routes. */
interface HealthDeps {
  config: GatewayConfig;
  checks: Record<string, HealthCheck>;
  log: Logger;
}

export async function metaRoutes(app: FastifyInstance, deps: HealthDeps) {
  const openapi = buildOpenApi(ALL_ROUTES, { title: 'Chat platform API', version: '1.0.0' });
  const asyncapi = buildAsyncApi({ title: 'Chat platform real-time socket', version: '1.0.0' });
  const page = docsPage(openapi);

  // Single flight: callers that arrive while a round of checks runs share its answer, so a burst of
  // health requests costs one round, never one per request (which would itself make it time out).
  let inFlight: Promise<HealthReport> | undefined;
  const currentReport = () => {
    inFlight ??= healthReport(deps).finally(() => {
      inFlight = undefined;
    });
    return inFlight;
  };

  route(app, gatewayRoutes.health, async (_req, reply) => {
    const report = await currentReport();
    const anyUnavailable = Object.values(report.services).some((service) => service.status === 'unavailable');
    reply.code(anyUnavailable ? 503 : 200);
    return report;
  });

  route(app, gatewayRoutes.openapi, async () => openapi);
  route(app, gatewayRoutes.asyncapi, async () => asyncapi);
  route(app, gatewayRoutes.docs, async (_req, reply) => {
    reply.type('text/html; charset=utf-8').header('content-security-policy', "default-src 'none'; style-src 'unsafe-inline'");
    return reply.send(page);
  });
}

type HealthReport = z.infer<typeof HealthReportSchema>;
type Readiness = HealthReport['services'][string]['status'];

/**
 * The public report: each process's readiness and nothing else. Why a check failed (addresses,
 * driver messages) is logged here and shown on the processes' own /health/ready, never to clients.
 */
async function healthReport(deps: HealthDeps): Promise<HealthReport> {
  const [gateway, ...services] = await Promise.all([
    runChecks(deps.checks).then((r) => {
      if (r.status !== 'ready') deps.log.warn({ checks: r.checks }, 'gateway not fully ready');
      return ['gateway', r.status] as const;
    }),
    ...Object.entries(upstreamUrls(deps.config)).map(([name, url]) => serviceReadiness(name, url, deps.log)),
  ]);
  const report: HealthReport['services'] = Object.fromEntries([gateway, ...services].map(([name, status]) => [name, { status }]));
  const ok = Object.values(report).every((s) => s.status === 'ready');
  return { status: ok ? 'ok' : 'degraded', services: report };
}

const READINESS = new Set<string>(['ready', 'degraded', 'unavailable']);

async function serviceReadiness(name: string, baseUrl: string, log: Logger): Promise<readonly [string, Readiness]> {
  try {
    const res = await fetch(new URL('/health/ready', baseUrl), { signal: AbortSignal.timeout(READY_TIMEOUT_MS) });
    const body = (await res.json()) as { status?: string; checks?: Record<string, string> };
    const status = res.ok && READINESS.has(body.status ?? '') ? (body.status as Readiness) : 'unavailable';
    if (status !== 'ready') log.warn({ service: name, checks: body.checks }, 'service not fully ready');
    return [name, status];
  } catch (err) {
    log.warn({ service: name, err }, 'service readiness unreachable');
    return [name, 'unavailable'];
  }
}
