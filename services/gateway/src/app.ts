import { createHttpApp, registerHealth } from '@chat/kit';
import type { FastifyInstance } from 'fastify';
import type { GatewayDeps } from './deps.ts';
import { edge } from './routes/edge.ts';
import { metaRoutes } from './routes/meta.ts';
import { proxyRoutes } from './routes/proxy.ts';

/** The edge checks, its own routes, then a proxy per path prefix. Never listens by itself. */
export async function buildApp(deps: GatewayDeps): Promise<FastifyInstance> {
  const app = createHttpApp({ log: deps.log, bodyLimit: deps.config.BODY_LIMIT_BYTES });
  registerHealth(app, deps.checks);
  await edge(app, deps);
  await metaRoutes(app, deps);
  await proxyRoutes(app, deps.config);
  return app;
}
