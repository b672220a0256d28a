import { socialRoutes as r } from '@chat/contracts';
import { contextOf, IDEMPOTENT, noContent, route } from '@chat/kit';
import type { FastifyInstance } from 'fastify';
import type { SocialDeps } from '../deps.ts';
import {
  acceptFriendRequest,
  blockedBy,
  blockUser,
  cancelFriendRequest,
  declineFriendRequest,
  friendsOf,
  pendingRequestsOf,
  removeFriend,
  sendFriendRequest,
  unblockUser,
} from '../domain/relationships.ts';

/** Answers of 204 routes carry no body. */

export function friendsRoutes(app: FastifyInstance, deps: SocialDeps): void {
  route(app, r.sendRequest, (req) => sendFriendRequest(deps, contextOf(req), req.body), IDEMPOTENT);
  route(app, r.listRequests, (req) => pendingRequestsOf(deps, contextOf(req), req.query));
  route(app, r.accept, (req) => acceptFriendRequest(deps, contextOf(req), req.body.userId));
  route(app, r.decline, (req) => noContent(declineFriendRequest(deps, contextOf(req), req.body.userId)));
  route(app, r.cancel, (req) => noContent(cancelFriendRequest(deps, contextOf(req), req.body.userId)));
  route(app, r.list, (req) => friendsOf(deps, contextOf(req), req.query));
  route(app, r.remove, (req) => noContent(removeFriend(deps, contextOf(req), req.params.userId)));
  route(app, r.block, (req) => blockUser(deps, contextOf(req), req.body.userId), IDEMPOTENT);
  route(app, r.unblock, (req) => noContent(unblockUser(deps, contextOf(req), req.params.userId)));
  route(app, r.listBlocked, (req) => blockedBy(deps, contextOf(req), req.query));
}
