import { createHttpApp, type HealthCheck, registerHealth, type TokenVerifier } from '@chat/kit';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { GatewayConfig } from './config.ts';
import type { RateLimiter } from './domain/rate-limit.ts';
import { edge } from './routes/edge.ts';
import { metaRoutes } from './routes/meta.ts';
import { proxyRoutes } from './routes/proxy.ts';

export interface GatewayDeps {
  config: GatewayConfig;
  log: Logger;
  /** Readiness of the gateway's own backing parts. */
  checks: Record<string, HealthCheck>;
  /** Verifies access tokens against auth's JWKS. */
  tokens: TokenVerifier;
  limiter: RateLimiter;
}

/** The edge checks, its own routes, then a proxy per path prefix. Never listens by itself. */
export async function buildApp(deps: GatewayDeps): Promise<FastifyInstance> {
  const app = createHttpApp({ log: deps.log, bodyLimit: deps.config.BODY_LIMIT_BYTES });
  registerHealth(app, deps.checks);
  await edge(app, deps);
  await metaRoutes(app, deps);
  await proxyRoutes(app, deps.config);
  return app;
}
