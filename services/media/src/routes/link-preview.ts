import { mediaRoutes } from '@chat/contracts';
import { contextOf, route } from '@chat/kit';
import type { FastifyInstance } from 'fastify';
import type { MediaDeps } from '../deps.ts';
import { previewLink } from '../domain/link-previews.ts';

/** GET /v1/link-preview?url= */
export function linkPreviewRoutes(app: FastifyInstance, deps: MediaDeps): void {
  route(app, mediaRoutes.linkPreview, async (req) => previewLink(deps, req.query.url, contextOf(req).userId));
}
