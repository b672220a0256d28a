import { createHttpApp, type HealthCheck, registerHealth } from '@chat/kit';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { GatewayConfig } from './config.ts';
import { metaRoutes } from './routes/meta.ts';
import { proxyRoutes } from './routes/proxy.ts';

export interface GatewayDeps {
  config: GatewayConfig;
  log: Logger;
  /** Readiness of the gateway's own backing parts. */
  checks: Record<string, HealthCheck>;
}

/** The edge: its own routes, then a proxy per path prefix. Never listens by itself. */
export async function buildApp(deps: GatewayDeps): Promise<FastifyInstance> {
  const app = createHttpApp({ log: deps.log, bodyLimit: deps.config.BODY_LIMIT_BYTES });
  registerHealth(app, deps.checks);
  await metaRoutes(app, deps);
  await proxyRoutes(app, deps.config);
  return app;
}
