import { ALL_ROUTES, type RouteContract } from '@chat/contracts';
import { createHttpApp, type HealthCheck, registerHealth, type TokenVerifier } from '@chat/kit';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { GatewayConfig } from './config.ts';
import type { RateLimiter } from './domain/rate-limit.ts';
import type { Realtime } from './realtime.ts';
import { edge } from './routes/edge.ts';
import { gatewayInfoRoutes } from './routes/gateway-info.ts';
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
  /** The route contracts requests are classified and routed by (ALL_ROUTES unless a test adds one). */
  routes?: RouteContract[];
  /** The real-time socket; without it (tests of the edge) only `GET /v1/gateway` is served. */
  realtime?: Realtime;
}

/** The edge checks, its own routes, then the proxy: by the route's contract, else by path prefix. Never listens by itself. */
export async function buildApp(deps: GatewayDeps): Promise<FastifyInstance> {
  const app = createHttpApp({ log: deps.log, bodyLimit: deps.config.BODY_LIMIT_BYTES });
  registerHealth(app, deps.checks);
  const routes = deps.routes ?? ALL_ROUTES;
  await edge(app, { ...deps, routes });
  await metaRoutes(app, deps);
  gatewayInfoRoutes(app, { config: deps.config, sockets: deps.realtime?.sockets });
  // Before the server stops: every client is told to reconnect (and resumes on another replica).
  app.addHook('preClose', async () => deps.realtime?.stop());
  await proxyRoutes(app, deps.config, routes);
  return app;
}
