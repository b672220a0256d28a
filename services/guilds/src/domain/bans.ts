import type { Ban } from '@chat/contracts';
import { Permission } from '@chat/contracts';
import { badRequest, forbidden, type KeyPage, notFound, withRetryingTx } from '@chat/kit';
import { deleteBan, listBans as listBanRows, upsertBan } from '../db/bans.ts';
import { rejectPendingOf } from '../db/join-requests.ts';
import { lockServer } from '../db/servers.ts';
import { loadServerAccess, memberAccess, requirePermission } from './access.ts';
import { type Ctx, type Domain, emit } from './context.ts';
import { removeMember } from './membership.ts';
import { outranks } from './permissions.ts';
import { requireKnownUser, withUserLookup } from './users.ts';

export async function listBans(d: Domain, ctx: Ctx, serverId: string, page: KeyPage): Promise<Ban[]> {
  const access = await memberAccess(d.pool, serverId, ctx.userId);
  requirePermission(access.permissions, Permission.BAN_MEMBERS, 'BAN_MEMBERS');
  return listBanRows(d.pool, serverId, page);
}

/**
 * Bans a user (a member or not, as in Discord) below the actor's highest role: removes the member,
 * turns down their pending join request. A user the read-model has not heard of yet is asked of auth.
 */
export function banUser(d: Domain, ctx: Ctx, serverId: string, userId: string, reason: string | null): Promise<Ban> {
  return withUserLookup(d, ctx, () => banKnownUser(d, ctx, serverId, userId, reason));
}

function banKnownUser(d: Domain, ctx: Ctx, serverId: string, userId: string, reason: string | null): Promise<Ban> {
  return withRetryingTx(d.pool, async (tx) => {
    await lockServer(tx, serverId);
    const actor = await memberAccess(tx, serverId, ctx.userId);
    requirePermission(actor.permissions, Permission.BAN_MEMBERS, 'BAN_MEMBERS');
    if (userId === ctx.userId) throw badRequest('You cannot ban yourself');
    const target = await loadServerAccess(tx, serverId, userId);
    if (target && !outranks(actor.rank, target.rank)) throw forbidden('You can only ban members below your highest role');
    await requireKnownUser(tx, userId);
    const ban = await upsertBan(tx, { serverId, userId, bannedBy: ctx.userId, reason });
    await removeMember(tx, ctx, serverId, userId, 'banned');
    for (const request of await rejectPendingOf(tx, serverId, userId, ctx.userId)) {
      await emit(tx, ctx, 'guilds.joinrequest.reviewed', request);
    }
    await emit(tx, ctx, 'guilds.member.banned', ban);
    return ban;
  });
}

export async function unbanUser(d: Domain, ctx: Ctx, serverId: string, userId: string): Promise<void> {
  await withRetryingTx(d.pool, async (tx) => {
    const actor = await memberAccess(tx, serverId, ctx.userId);
    requirePermission(actor.permissions, Permission.BAN_MEMBERS, 'BAN_MEMBERS');
    if (!(await deleteBan(tx, serverId, userId))) throw notFound('Ban');
    await emit(tx, ctx, 'guilds.member.unbanned', { serverId, userId });
  });
}
