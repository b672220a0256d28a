import { ALL_ROUTES, buildOpenApi, gatewayRoutes } from '@chat/contracts';
import { route, runChecks } from '@chat/kit';
import type { FastifyInstance } from 'fastify';
import type { GatewayConfig } from '../config.ts';
import { upstreamUrls } from '../domain/upstreams.ts';
import { docsPage } from './docs-page.ts';

const READY_TIMEOUT_MS = 800;

/** /v1/health, /v1/openapi.json and /v1/docs: the gateway's own routes. */
export async function metaRoutes(app: FastifyInstance, deps: { config: GatewayConfig; checks: Record<string, () => Promise<unknown>> }) {
  const openapi = buildOpenApi(ALL_ROUTES, { title: 'Chat platform API', version: '1.0.0' });
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
    reply.code(report.status === 'ok' ? 200 : 503);
    return report;
  });

  route(app, gatewayRoutes.openapi, async () => openapi);
  route(app, gatewayRoutes.docs, async (_req, reply) => {
    reply.type('text/html; charset=utf-8').header('content-security-policy', "default-src 'none'; style-src 'unsafe-inline'");
    return reply.send(page);
  });
}

type HealthReport = {
  status: 'ok' | 'degraded';
  services: Record<string, { status: 'ready' | 'unavailable'; checks?: Record<string, string> }>;
};

async function healthReport(deps: { config: GatewayConfig; checks: Record<string, () => Promise<unknown>> }): Promise<HealthReport> {
  const [gateway, ...services] = await Promise.all([
    runChecks(deps.checks),
    ...Object.entries(upstreamUrls(deps.config)).map(([name, url]) => serviceReadiness(name, url)),
  ]);
  const report: HealthReport['services'] = {
    gateway: { status: gateway.ready ? 'ready' : 'unavailable', checks: gateway.checks },
    ...Object.fromEntries(services),
  };
  const ok = Object.values(report).every((s) => s.status === 'ready');
  return { status: ok ? 'ok' : 'degraded', services: report };
}

async function serviceReadiness(name: string, baseUrl: string) {
  try {
    const res = await fetch(new URL('/health/ready', baseUrl), { signal: AbortSignal.timeout(READY_TIMEOUT_MS) });
    const body = (await res.json()) as { checks?: Record<string, string> };
    return [name, { status: res.ok ? 'ready' : 'unavailable', checks: body.checks }] as const;
  } catch (err) {
    return [name, { status: 'unavailable', checks: { http: `unreachable: ${(err as Error).message}` } }] as const;
  }
}
