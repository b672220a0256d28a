import { serversRoutes as r } from '@chat/contracts';
import { contextOf, IDEMPOTENT, route } from '@chat/kit';
import type { FastifyInstance } from 'fastify';
import { createCategory, deleteCategory, listCategories, renameCategory, reorderCategories } from '../domain/categories.ts';
import type { Domain } from '../domain/context.ts';
import { noContent } from './no-content.ts';

export function categoryRoutes(app: FastifyInstance, d: Domain): void {
  route(app, r.listCategories, async (req) => listCategories(d, contextOf(req), req.params.serverId));
  route(app, r.createCategory, async (req) => createCategory(d, contextOf(req), req.params.serverId, req.body.name), IDEMPOTENT);
  route(app, r.reorderCategories, async (req) => reorderCategories(d, contextOf(req), req.params.serverId, req.body.categoryIds));
  route(app, r.updateCategory, async (req) => renameCategory(d, contextOf(req), req.params.serverId, req.params.categoryId, req.body.name));
  route(app, r.deleteCategory, async (req) => noContent(deleteCategory(d, contextOf(req), req.params.serverId, req.params.categoryId)));
}
