import { ALL_ROUTES } from '@chat/contracts';
import { createHttpApp, registerHealth } from '@chat/kit';
import type { FastifyInstance } from 'fastify';
import type { GatewayDeps } from './deps.ts';
import { SECURITY_HEADERS } from './domain/security-headers.ts';
import { edge } from './routes/edge.ts';
import { gatewayInfoRoutes } from './routes/gateway-info.ts';
import { metaRoutes } from './routes/meta.ts';
import { proxyRoutes } from './routes/proxy.ts';
import { SOCKET_PATH } from './routes/socket.ts';

/** The edge checks, its own routes, then the proxy: by the route's contract, else by path prefix. Never listens by itself. */
export async function buildApp(deps: GatewayDeps): Promise<FastifyInstance> {
  const app = createHttpApp({
    log: deps.log,
    bodyLimit: deps.config.BODY_LIMIT_BYTES,
    upgradesAt: (path) => path.toLowerCase() === SOCKET_PATH,
    answerHeaders: SECURITY_HEADERS,
    parsesBodies: false,
  });
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
