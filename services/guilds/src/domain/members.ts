import { type Member, Permission } from '@chat/contracts';
import { type Bus, badRequest, forbidden, notFound, type Queryable, seenStatuses, withRetryingTx } from '@chat/kit';
import { findMember, listMembers as listMemberRows, setNickname } from '../db/members.ts';
import { lockServer } from '../db/servers.ts';
import { loadServerAccess, memberAccess, requirePermission, type ServerAccess } from './access.ts';
import { type Ctx, type Domain, emit } from './context.ts';
import { announcedMember, removeMember } from './membership.ts';
import { outranks } from './permissions.ts';

export async function listMembers(d: Domain, ctx: Ctx, serverId: string, page: { limit: number; after?: string }): Promise<Member[]> {
  await memberAccess(d.pool, serverId, ctx.userId);
  return withPresence(d.bus, ctx, await listMemberRows(d.pool, serverId, page.limit, page.after));
}

/**
 * Members as others see them now (one question to the gateway for the whole list): their status,
 * and what they play only while they are seen (an invisible member's game would give them away).
 */
export async function withPresence(bus: Bus, ctx: Ctx, members: Member[]): Promise<Member[]> {
  if (members.length === 0) return members;
  const seen = await seenStatuses(
    bus,
    members.map((m) => m.userId),
    ctx.requestId,
  );
  return members.map(({ activity, ...member }) => {
    const status = seen(member.userId);
    return { ...member, status, ...(activity && status !== 'offline' ? { activity } : {}) };
  });
}

export async function myServerPermissions(d: Domain, ctx: Ctx, serverId: string): Promise<bigint> {
  return (await memberAccess(d.pool, serverId, ctx.userId)).permissions;
}

/**
 * The target of a moderation action must be a member the actor outranks: otherwise 403 (the target
 * is visible to any member, so not a 404). Answers the target's access.
 */
export async function outrankedMember(tx: Queryable, actor: ServerAccess, userId: string): Promise<ServerAccess> {
  const target = await loadServerAccess(tx, actor.server.id, userId);
  if (!target?.isMember) throw notFound('Member');
  if (!outranks(actor.rank, target.rank)) throw forbidden('You can only act on members below your highest role');
  return target;
}

/**
 * My own nickname needs CHANGE_NICKNAME; someone else's MANAGE_NICKNAMES and a higher role. The
 * server row is locked first, as kicks, bans, leaves and the server's deletion take it: one under way
 * finishes first, and the rename then answers what it answers after it (404), not the 500 of a row
 * gone between the checks and the write.
 */
export async function updateNickname(d: Domain, ctx: Ctx, serverId: string, userId: string, nickname: string | null): Promise<Member> {
  const updated = await withRetryingTx(d.pool, async (tx) => {
    await lockServer(tx, serverId);
    const access = await memberAccess(tx, serverId, ctx.userId);
    if (userId === ctx.userId) {
      requirePermission(access.permissions, Permission.CHANGE_NICKNAME, 'CHANGE_NICKNAME');
    } else {
      requirePermission(access.permissions, Permission.MANAGE_NICKNAMES, 'MANAGE_NICKNAMES');
      await outrankedMember(tx, access, userId);
    }
    const member = (await setNickname(tx, serverId, userId, nickname)) && (await findMember(tx, serverId, userId));
    if (!member) throw notFound('Member');
    await emit(tx, ctx, 'guilds.member.updated', announcedMember(member));
    return member;
  });
  return (await withPresence(d.bus, ctx, [updated]))[0] as Member;
}

export async function kickMember(d: Domain, ctx: Ctx, serverId: string, userId: string): Promise<void> {
  if (userId === ctx.userId) throw badRequest('Use DELETE /v1/servers/{serverId}/members/@me to leave');
  await withRetryingTx(d.pool, async (tx) => {
    await lockServer(tx, serverId);
    const access = await memberAccess(tx, serverId, ctx.userId);
    requirePermission(access.permissions, Permission.KICK_MEMBERS, 'KICK_MEMBERS');
    await outrankedMember(tx, access, userId);
    await removeMember(tx, ctx, serverId, userId, 'kicked');
  });
}

export async function leaveServer(d: Domain, ctx: Ctx, serverId: string): Promise<void> {
  await withRetryingTx(d.pool, async (tx) => {
    await lockServer(tx, serverId);
    const access = await memberAccess(tx, serverId, ctx.userId);
    if (access.isOwner) throw badRequest('The owner cannot leave the server; delete it instead');
    await removeMember(tx, ctx, serverId, ctx.userId, 'left');
  });
}
