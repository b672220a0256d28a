import { serversRoutes as r } from '@chat/contracts';
import { contextOf, IDEMPOTENT, route } from '@chat/kit';
import type { FastifyInstance } from 'fastify';
import type { Domain } from '../domain/context.ts';
import { createServer, deleteServer, discover, getServer, joinServer, listMyServers, updateServer } from '../domain/servers.ts';
import { exportTemplate, importTemplate } from '../domain/templates.ts';
import { noContent } from './no-content.ts';

export function serverRoutes(app: FastifyInstance, d: Domain): void {
  route(app, r.createServer, async (req) => createServer(d, contextOf(req), req.body), IDEMPOTENT);
  route(app, r.listMyServers, async (req) => listMyServers(d, contextOf(req), req.query));
  route(app, r.getServer, async (req) => getServer(d, contextOf(req), req.params.serverId));
  route(app, r.updateServer, async (req) => updateServer(d, contextOf(req), req.params.serverId, req.body));
  route(app, r.deleteServer, async (req) => noContent(deleteServer(d, contextOf(req), req.params.serverId)));
  route(app, r.joinServer, async (req) => joinServer(d, contextOf(req), req.params.serverId));
  route(app, r.discoverServers, async (req) => discover(d, req.query));
  route(app, r.importTemplate, async (req) => importTemplate(d, contextOf(req), req.body.template), IDEMPOTENT);
  route(app, r.exportTemplate, async (req) => exportTemplate(d, contextOf(req), req.params.serverId));
}
