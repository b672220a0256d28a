import { CreateInviteBody, serversRoutes as r } from '@chat/contracts';
import { contextOf, IDEMPOTENT, route } from '@chat/kit';
import type { FastifyInstance } from 'fastify';
import type { Domain } from '../domain/context.ts';
import { acceptInvite, createInvite, listInvites, previewInvite, revokeInvite } from '../domain/invites.ts';
import { listJoinRequests, myJoinRequests, requestToJoin, reviewRequest } from '../domain/join-requests.ts';
import { noContent } from './no-content.ts';

/** An invite created without a body gets the schema's defaults (unlimited uses, one day). */
const INVITE_DEFAULTS = CreateInviteBody.parse({});

export function inviteRoutes(app: FastifyInstance, d: Domain): void {
  route(app, r.createInvite, async (req) => createInvite(d, contextOf(req), req.params.serverId, req.body ?? INVITE_DEFAULTS), IDEMPOTENT);
  route(app, r.listInvites, async (req) => listInvites(d, contextOf(req), req.params.serverId, req.query));
  route(app, r.revokeInvite, async (req) => noContent(revokeInvite(d, contextOf(req), req.params.code)));
  route(app, r.previewInvite, async (req) => previewInvite(d, req.params.code));
  route(app, r.acceptInvite, async (req) => acceptInvite(d, contextOf(req), req.params.code));
}

export function joinRequestRoutes(app: FastifyInstance, d: Domain): void {
  route(
    app,
    r.createJoinRequest,
    async (req) => requestToJoin(d, contextOf(req), req.params.serverId, req.body?.message ?? null),
    IDEMPOTENT,
  );
  route(app, r.listJoinRequests, async (req) => listJoinRequests(d, contextOf(req), req.params.serverId, req.query));
  route(app, r.approveJoinRequest, async (req) => reviewRequest(d, contextOf(req), req.params.serverId, req.params.requestId, true));
  route(app, r.rejectJoinRequest, async (req) => reviewRequest(d, contextOf(req), req.params.serverId, req.params.requestId, false));
  route(app, r.myJoinRequests, async (req) => myJoinRequests(d, contextOf(req)));
}
