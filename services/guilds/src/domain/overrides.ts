import type { PermissionOverride } from '@chat/contracts';
import { MAX_CHANNEL_OVERRIDES, Permission, type PutOverrideBody } from '@chat/contracts';
import { badRequest, conflict, forbidden, notFound, type Queryable, withRetryingTx } from '@chat/kit';
import { v7 as uuidv7 } from 'uuid';
import { findMember } from '../db/members.ts';
import {
  countOverrides,
  deleteOverride as deleteOverrideRow,
  findOverride,
  findOverrideById,
  insertOverrideIfAbsent,
  listOverrides as listOverrideRows,
  lockChannelOverrides,
  setOverrideBits,
} from '../db/overrides.ts';
import { findServerRole } from '../db/roles.ts';
import { type ChannelAccess, channelAccess, loadServerAccess, requirePermission } from './access.ts';
import { type Ctx, type Domain, emit } from './context.ts';
import { canEditOverrideOf, type OverrideBits, type OverrideTarget, overrideChangeBeyondActor } from './permissions.ts';
import { overrideScope, watchViews } from './view-changes.ts';

export async function listOverrides(d: Domain, ctx: Ctx, channelId: string): Promise<PermissionOverride[]> {
  await channelAccess(d.pool, channelId, ctx.userId);
  return listOverrideRows(d.pool, channelId);
}

/** MANAGE_ROLES in the channel itself (Discord's rule for overwrites). */
function requireOverrideManager(access: ChannelAccess) {
  requirePermission(access.channelPermissions, Permission.MANAGE_ROLES, 'MANAGE_ROLES');
}

/** Where the override's role or member stands, or undefined when it is not of this server. */
async function targetOf(tx: Queryable, serverId: string, target: { roleId?: string | null; userId?: string | null }) {
  if (target.roleId) {
    if (target.roleId === serverId) return { kind: 'everyone' } satisfies OverrideTarget;
    const role = await findServerRole(tx, serverId, target.roleId);
    return role && ({ kind: 'role', position: role.position } satisfies OverrideTarget);
  }
  const member = await loadServerAccess(tx, serverId, target.userId!);
  return member && ({ kind: 'member', rank: member.rank } satisfies OverrideTarget);
}

const bitsOf = (o: PermissionOverride | undefined): OverrideBits | undefined =>
  o && { allow: BigInt(o.allowBits), deny: BigInt(o.denyBits) };

/**
 * Issue 16: the actor may change only overrides of targets below them (canEditOverrideOf) and only
 * bits they hold in this channel, whether the change grants, denies or lifts them.
 */
function requireOverrideChange(access: ChannelAccess, target: OverrideTarget, before?: OverrideBits, after?: OverrideBits) {
  if (!canEditOverrideOf(access.rank, target)) {
    throw forbidden('You can only change the overrides of @everyone, of roles below your highest role and of members below it');
  }
  if (overrideChangeBeyondActor(access.channelPermissions, before, after) !== 0n) {
    throw forbidden('You cannot allow, deny or lift a permission you do not have in this channel');
  }
}

/** Creates or replaces the override of a role or member of this channel's server. */
export function putOverride(d: Domain, ctx: Ctx, channelId: string, body: PutOverrideBody): Promise<PermissionOverride> {
  return withRetryingTx(d.pool, async (tx) => {
    const access = await channelAccess(tx, channelId, ctx.userId);
    requireOverrideManager(access);
    const serverId = access.channel.serverId;
    const target = await targetOf(tx, serverId, body);
    if (body.roleId && !target) throw badRequest('roleId is not a role of this server');
    if (body.userId && !(await findMember(tx, serverId, body.userId))) throw badRequest('userId is not a member of this server');
    const [allow, deny] = [BigInt(body.allowBits), BigInt(body.denyBits)];
    if (allow & deny) throw badRequest('allowBits and denyBits must not share a bit');
    // Creates of this channel's overrides take turns, so each counts those before it.
    await lockChannelOverrides(tx, channelId);
    const views = await watchViews(tx, serverId, overrideScope(serverId, channelId, body));
    const override = await writeCheckedOverride(tx, access, target!, channelId, body, { allow, deny });
    await emit(tx, ctx, 'guilds.override.updated', override);
    await views.announce(ctx);
    return override;
  });
}

// A create that loses to a concurrent create decides again; more than this means the target keeps changing.
const WRITE_ATTEMPTS = 3;

/**
 * Discord's limit per channel, as an import takes them: past it, the server's own export could not
 * be imported. The caller holds the channel's overrides lock, so concurrent creates count in turn.
 */
async function requireRoomForOverride(tx: Queryable, channelId: string): Promise<void> {
  if ((await countOverrides(tx, channelId)) >= MAX_CHANNEL_OVERRIDES) {
    throw badRequest(`A channel has at most ${MAX_CHANNEL_OVERRIDES} permission overrides`);
  }
}

/**
 * Writes the override only over the one the change was checked against: an existing override is
 * locked while checked; when there is none, the insert does not overwrite one that another
 * transaction created meanwhile (a moderator lifting the owner's deny that way), it checks again.
 */
async function writeCheckedOverride(
  tx: Queryable,
  access: ChannelAccess,
  target: OverrideTarget,
  channelId: string,
  of: Pick<PutOverrideBody, 'roleId' | 'userId'>,
  bits: OverrideBits,
): Promise<PermissionOverride> {
  const row = { channelId, roleId: of.roleId ?? null, userId: of.userId ?? null, ...bits };
  for (let attempt = 0; attempt < WRITE_ATTEMPTS; attempt++) {
    const previous = await findOverride(tx, channelId, of);
    requireOverrideChange(access, target, bitsOf(previous), bits);
    if (previous) return setOverrideBits(tx, previous.id, bits.allow, bits.deny);
    await requireRoomForOverride(tx, channelId);
    const created = await insertOverrideIfAbsent(tx, { id: uuidv7(), ...row });
    if (created) return created;
  }
  throw conflict('The override kept changing while saving; try again');
}

export async function deleteOverride(d: Domain, ctx: Ctx, channelId: string, overrideId: string): Promise<void> {
  await withRetryingTx(d.pool, async (tx) => {
    const access = await channelAccess(tx, channelId, ctx.userId);
    requireOverrideManager(access);
    const override = await findOverrideById(tx, channelId, overrideId);
    if (!override) throw notFound('Permission override');
    // A role's override goes with its role (cascade) and a departed member ranks lowest: always a target.
    const target = await targetOf(tx, access.channel.serverId, override);
    requireOverrideChange(access, target!, bitsOf(override), undefined);
    const views = await watchViews(tx, access.channel.serverId, overrideScope(access.channel.serverId, channelId, override));
    await deleteOverrideRow(tx, overrideId);
    await emit(tx, ctx, 'guilds.override.deleted', { id: overrideId, channelId });
    await views.announce(ctx);
  });
}
