import type { PermissionOverride } from '@chat/contracts';
import { Permission, type PutOverrideBody } from '@chat/contracts';
import { badRequest, forbidden, notFound, withTx } from '@chat/kit';
import { v7 as uuidv7 } from 'uuid';
import { findMember } from '../db/members.ts';
import {
  deleteOverride as deleteOverrideRow,
  findOverride,
  findOverrideById,
  listOverrides as listOverrideRows,
  upsertOverride,
} from '../db/overrides.ts';
import { findServerRole } from '../db/roles.ts';
import { type ChannelAccess, channelAccess, requirePermission } from './access.ts';
import { type Ctx, type Domain, emit } from './context.ts';
import { bitsBeyondActor } from './permissions.ts';

export async function listOverrides(d: Domain, ctx: Ctx, channelId: string): Promise<PermissionOverride[]> {
  await channelAccess(d.pool, channelId, ctx.userId);
  return listOverrideRows(d.pool, channelId);
}

/** MANAGE_ROLES in the channel itself (Discord's rule for overwrites). */
function requireOverrideManager(access: ChannelAccess) {
  requirePermission(access.channelPermissions, Permission.MANAGE_ROLES, 'MANAGE_ROLES');
}

/**
 * Creates or replaces the override of a role or member of this channel's server. Newly allowed or
 * newly denied bits must be ones the actor holds in this channel.
 */
export function putOverride(d: Domain, ctx: Ctx, channelId: string, body: PutOverrideBody): Promise<PermissionOverride> {
  return withTx(d.pool, async (tx) => {
    const access = await channelAccess(tx, channelId, ctx.userId);
    requireOverrideManager(access);
    const serverId = access.channel.serverId;
    if (body.roleId && !(await findServerRole(tx, serverId, body.roleId))) throw badRequest('roleId is not a role of this server');
    if (body.userId && !(await findMember(tx, serverId, body.userId))) throw badRequest('userId is not a member of this server');
    const previous = await findOverride(tx, channelId, body);
    const [allow, deny] = [BigInt(body.allowBits), BigInt(body.denyBits)];
    if (allow & deny) throw badRequest('allowBits and denyBits must not share a bit');
    const beyond =
      bitsBeyondActor(access.channelPermissions, BigInt(previous?.allowBits ?? 0), allow) |
      bitsBeyondActor(access.channelPermissions, BigInt(previous?.denyBits ?? 0), deny);
    if (beyond !== 0n) throw forbidden('You cannot allow or deny a permission you do not have in this channel');
    const override = await upsertOverride(tx, {
      id: uuidv7(),
      channelId,
      roleId: body.roleId ?? null,
      userId: body.userId ?? null,
      allow,
      deny,
    });
    await emit(tx, ctx, 'guilds.override.updated', override);
    return override;
  });
}

export async function deleteOverride(d: Domain, ctx: Ctx, channelId: string, overrideId: string): Promise<void> {
  await withTx(d.pool, async (tx) => {
    const access = await channelAccess(tx, channelId, ctx.userId);
    requireOverrideManager(access);
    if (!(await findOverrideById(tx, channelId, overrideId))) throw notFound('Permission override');
    await deleteOverrideRow(tx, overrideId);
    await emit(tx, ctx, 'guilds.override.deleted', { id: overrideId, channelId });
  });
}
