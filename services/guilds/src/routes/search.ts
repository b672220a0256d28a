import { searchRoutes as r } from '@chat/contracts';
import { contextOf, route } from '@chat/kit';
import type { FastifyInstance } from 'fastify';
import type { Domain } from '../domain/context.ts';
import { searchServerMessages } from '../domain/search.ts';

/** Search of a server's channel messages. */
export function searchRoutes(app: FastifyInstance, d: Domain): void {
  route(app, r.searchServerMessages, async (req) => searchServerMessages(d, contextOf(req), req.params.id, req.query));
}
