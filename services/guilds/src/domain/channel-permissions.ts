import { type ExplainedPermissionsReply, Permission, type PermissionName, toMask } from '@chat/contracts';
import { notFound } from '@chat/kit';
import { channelAccess, loadChannelAccess, requirePermission } from './access.ts';
import type { Ctx, Domain } from './context.ts';
import { PermissionTrace } from './permissions.ts';

/**
 * Channel-level masks as the API answers them, optionally explained. The explanation is recorded
 * by the same permission functions that compute the mask every route enforces, so the two cannot
 * disagree.
 */

const NAMES = Object.keys(Permission) as PermissionName[];

function answer(mask: bigint, trace: PermissionTrace | undefined, serverId: string): ExplainedPermissionsReply {
  if (!trace) return { permissions: toMask(mask) };
  const explanation = NAMES.map((permission) => {
    const decision = trace.decisions.get(Permission[permission]);
    if (!decision) throw new Error(`permission ${permission} left undecided`);
    const { by } = decision;
    const roleId = 'roleId' in by ? (by.roleId ?? serverId) : null;
    return { permission, granted: decision.granted, source: by.source, roleId };
  });
  return { permissions: toMask(mask), explanation };
}

/** The caller's mask in a channel they can view (404 otherwise). */
export async function myChannelPermissions(d: Domain, ctx: Ctx, channelId: string, explain: boolean): Promise<ExplainedPermissionsReply> {
  const trace = explain ? new PermissionTrace() : undefined;
  const access = await channelAccess(d.pool, channelId, ctx.userId, trace);
  return answer(access.channelPermissions, trace, access.server.id);
}

/**
 * A member's mask in a channel the caller can view, for callers with MANAGE_ROLES there (who may
 * edit its overrides anyway). The member may well be unable to view it: that is worth explaining.
 */
export async function memberChannelPermissions(
  d: Domain,
  ctx: Ctx,
  channelId: string,
  userId: string,
  explain: boolean,
): Promise<ExplainedPermissionsReply> {
  const caller = await channelAccess(d.pool, channelId, ctx.userId);
  requirePermission(caller.channelPermissions, Permission.MANAGE_ROLES, 'MANAGE_ROLES');
  const trace = explain ? new PermissionTrace() : undefined;
  const target = await loadChannelAccess(d.pool, channelId, userId, trace);
  if (!target?.isMember) throw notFound('Member');
  return answer(target.channelPermissions, trace, target.server.id);
}
