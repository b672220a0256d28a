import { type JoinRequest, MANAGE_SERVER } from '@chat/contracts';
import { badRequest, conflict, forbidden, type KeyPage, notFound, withRetryingTx } from '@chat/kit';
import { v7 as uuidv7 } from 'uuid';
import { isBanned } from '../db/bans.ts';
import {
  insertJoinRequest,
  listJoinRequests as listJoinRequestRows,
  listJoinRequestsOfUser,
  lockJoinRequest,
  reviewJoinRequest,
} from '../db/join-requests.ts';
import { lockServer } from '../db/servers.ts';
import { memberAccess, requirePermission, serverAccess } from './access.ts';
import { type Ctx, type Domain, emit } from './context.ts';
import { addMember } from './membership.ts';
import { holdEntrance } from './system-messages.ts';

/** One pending request per user and server (a second is a 409), for public servers that require approval. */
export function requestToJoin(d: Domain, ctx: Ctx, serverId: string, message: string | null): Promise<JoinRequest> {
  return withRetryingTx(d.pool, async (tx) => {
    await holdEntrance(tx, serverId);
    await lockServer(tx, serverId);
    const access = await serverAccess(tx, serverId, ctx.userId);
    if (access.isMember) throw conflict('You are already a member of this server');
    if (await isBanned(tx, serverId, ctx.userId)) throw forbidden('You are banned from this server');
    if (!access.server.require_approval) throw badRequest('This server does not require approval; join it directly');
    const request = await insertJoinRequest(tx, { id: uuidv7(), serverId, userId: ctx.userId, message });
    await emit(tx, ctx, 'guilds.joinrequest.created', request);
    return request;
  });
}

export async function listJoinRequests(
  d: Domain,
  ctx: Ctx,
  serverId: string,
  query: KeyPage & { status: JoinRequest['status'] },
): Promise<JoinRequest[]> {
  const access = await memberAccess(d.pool, serverId, ctx.userId);
  requirePermission(access.permissions, MANAGE_SERVER, 'MANAGE_SERVER');
  return listJoinRequestRows(d.pool, serverId, query.status, query);
}

export function myJoinRequests(d: Domain, ctx: Ctx): Promise<JoinRequest[]> {
  return listJoinRequestsOfUser(d.pool, ctx.userId);
}

/**
 * Approving adds the requester as a member; rejecting only records the decision. A request that is
 * no longer pending (decided, turned down by a ban, approved by the requester's joining) is a 409.
 */
export function reviewRequest(d: Domain, ctx: Ctx, serverId: string, requestId: string, approve: boolean): Promise<JoinRequest> {
  return withRetryingTx(d.pool, async (tx) => {
    await lockServer(tx, serverId);
    const access = await memberAccess(tx, serverId, ctx.userId);
    requirePermission(access.permissions, MANAGE_SERVER, 'MANAGE_SERVER');
    const request = await lockJoinRequest(tx, serverId, requestId);
    if (!request) throw notFound('Join request');
    if (request.status !== 'pending') throw conflict(`This join request was already ${request.status}`);
    if (approve && (await isBanned(tx, serverId, request.userId))) throw conflict('The requester is banned from this server');
    // Decided before the member is added, which then finds no pending request of theirs to settle.
    const reviewed = await reviewJoinRequest(tx, requestId, approve ? 'approved' : 'rejected', ctx.userId);
    if (approve) await addMember(tx, ctx, serverId, request.userId);
    await emit(tx, ctx, 'guilds.joinrequest.reviewed', reviewed);
    return reviewed;
  });
}
