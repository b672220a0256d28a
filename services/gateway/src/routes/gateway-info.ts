import { gatewayRoutes } from '@chat/contracts';
import { requestIdOf, route } from '@chat/kit';
import type { FastifyInstance } from 'fastify';
import type { GatewayConfig } from '../config.ts';
import { SOCKET_PATH, type SocketServer } from './socket.ts';

/**
 * `GET /v1/gateway` (where to open the socket) and the socket's upgrade on this process. A plain
 * GET of the socket path (no upgrade) is a 400.
 */
export function gatewayInfoRoutes(app: FastifyInstance, deps: { config: GatewayConfig; sockets?: SocketServer }): void {
  route(app, gatewayRoutes.gateway, async (req) => {
    if (deps.config.GATEWAY_PUBLIC_URL) return { url: deps.config.GATEWAY_PUBLIC_URL };
    const secure = req.headers['x-forwarded-proto'] === 'https' || req.protocol === 'https';
    return { url: `${secure ? 'wss' : 'ws'}://${req.host}${SOCKET_PATH}` };
  });
  // The upgrade itself never reaches the router (the server's 'upgrade' event below takes it).
  route(app, gatewayRoutes.socket, async (_req, reply) => reply.code(400).send({ error: 'Expected a WebSocket upgrade' }));
  const sockets = deps.sockets;
  if (!sockets) return;
  // Fastify never sees an upgrade, so it is logged here as Fastify logs a request: under its
  // request id (echoed on the answer), its url redacted, then its outcome.
  app.server.on('upgrade', (req, socket, head) => {
    const reqId = requestIdOf(req.headers);
    const log = app.log.child({ reqId });
    const started = performance.now();
    log.info({ req, remoteAddress: req.socket.remoteAddress }, 'incoming socket upgrade');
    sockets.upgrade(req, socket, head, { 'x-request-id': reqId }).then(
      (status) =>
        log.info({ status, responseTime: performance.now() - started }, status === 101 ? 'socket opened' : 'socket upgrade refused'),
      (err) => {
        log.warn({ err }, 'socket upgrade failed');
        socket.destroy();
      },
    );
  });
}
