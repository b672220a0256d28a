import { ALL_ROUTES } from '@chat/contracts';
import { createHttpApp, type HealthCheck, optionalCheck, runChecks } from '@chat/kit';
import type { FastifyInstance } from 'fastify';
import type { GatewayDeps } from './deps.ts';
import { SECURITY_HEADERS } from './domain/security-headers.ts';
import { countRouterAnswers, edge } from './routes/edge.ts';
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
    beforeRouterAnswer: countRouterAnswers(deps),
  });
  const checks = gatewayChecks(deps);
  registerProbes(app, checks);
  const routes = deps.routes ?? ALL_ROUTES;
  await edge(app, { ...deps, routes });
  await metaRoutes(app, { ...deps, checks });
  gatewayInfoRoutes(app, { config: deps.config, sockets: deps.realtime?.sockets });
  // Before the server stops: every client is told to reconnect (and resumes on another replica).
  app.addHook('preClose', async () => deps.realtime?.stop());
  await proxyRoutes(app, deps.config, routes);
  return app;
}

/** The backing parts' checks, and the socket's: refused until this replica listens for its sessions' frames. */
function gatewayChecks(deps: GatewayDeps): Record<string, HealthCheck> {
  const sockets = deps.realtime?.sockets;
  if (!sockets) return deps.checks;
  return { ...deps.checks, sockets: optionalCheck(async () => sockets.assertReady()) };
}

/**
 * The orchestrator's probes (deploy/k8s, docker-compose): 200 while the gateway can serve (ready or
 * degraded), 503 when it cannot. This port is the public one, so they answer the status only: why
 * a check failed (addresses, driver messages) is for operators, logged by /v1/health (meta.ts).
 * While closing, Fastify answers them 503 itself.
 */
function registerProbes(app: FastifyInstance, checks: Record<string, HealthCheck>): void {
  app.get('/health/live', async () => ({ status: 'ok' }));
  app.get('/health/ready', async (_req, reply) => {
    const { status } = await runChecks(checks);
    return reply.code(status === 'unavailable' ? 503 : 200).send({ status });
  });
}
