import { socialRoutes as r } from '@chat/contracts';
import { contextOf, IDEMPOTENT, route } from '@chat/kit';
import type { FastifyInstance } from 'fastify';
import { acceptCall, type CallDeps, declineCall, getCall, leaveCall, startCall } from '../domain/calls.ts';

export function callRoutes(app: FastifyInstance, deps: CallDeps): void {
  route(app, r.startCall, (req) => startCall(deps, contextOf(req), req.params.id), IDEMPOTENT);
  route(app, r.getCall, (req) => getCall(deps, contextOf(req), req.params.id));
  route(app, r.acceptCall, (req) => acceptCall(deps, contextOf(req), req.params.id));
  route(app, r.declineCall, (req) => declineCall(deps, contextOf(req), req.params.id));
  route(app, r.leaveCall, (req) => leaveCall(deps, contextOf(req), req.params.id));
}
