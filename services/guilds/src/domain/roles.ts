import { type CreateRoleBody, MAX_SERVER_ROLES, Permission, type Role, type UpdateRoleBody } from '@chat/contracts';
import { badRequest, enqueueEvents, forbidden, notFound, outboxRow, type Queryable, withRetryingTx } from '@chat/kit';
import { v7 as uuidv7 } from 'uuid';
import { addMemberRole, findMember, removeMemberRole } from '../db/members.ts';
import {
  countRoles,
  deleteRole as deleteRoleRow,
  highestRolePosition,
  insertRoleAtBottom,
  listRoles as listRoleRows,
  lockRoles,
  lockServerRole,
  moveRole,
  updateRole as updateRoleRow,
} from '../db/roles.ts';
import { findServer, lockServer, toServer } from '../db/servers.ts';
import { memberAccess, requirePermission, type ServerAccess } from './access.ts';
import { type Ctx, type Domain, emit } from './context.ts';
import { announcedMember } from './membership.ts';
import { bitsBeyondActor, canManageRoleAt } from './permissions.ts';
import { changesViews, roleScope, watchViews } from './view-changes.ts';

export async function listRoles(d: Domain, ctx: Ctx, serverId: string): Promise<Role[]> {
  await memberAccess(d.pool, serverId, ctx.userId);
  return listRoleRows(d.pool, serverId);
}

/**
 * MANAGE_ROLES, with role changes of the server serialised (positions move together). The lock comes
 * before the actor's rank is read: read first, a concurrent change that lowers the actor's role
 * would leave a stale rank that lets them move a role above their own (issue 16).
 */
async function roleManager(tx: Queryable, serverId: string, userId: string): Promise<ServerAccess> {
  await lockRoles(tx, serverId);
  const access = await memberAccess(tx, serverId, userId);
  requirePermission(access.permissions, Permission.MANAGE_ROLES, 'MANAGE_ROLES');
  return access;
}

function checkGrant(actor: ServerAccess, before: bigint, after: bigint) {
  if (bitsBeyondActor(actor.permissions, before, after) !== 0n) throw forbidden('You cannot grant a permission you do not have');
}

/** The role, if it is this server's and below the actor's highest role. */
async function manageableRole(tx: Queryable, actor: ServerAccess, roleId: string): Promise<Role> {
  const role = await lockServerRole(tx, actor.server.id, roleId);
  if (!role) throw notFound('Role');
  if (!canManageRoleAt(actor.rank, role.position)) throw forbidden('You can only manage roles below your highest role');
  return role;
}

const isEveryone = (role: Role) => role.id === role.serverId;

/**
 * Every role a create, a move or a delete shifted gets its event (ROLE_UPDATE on the socket), as
 * channels do, so clients that follow the events keep the positions REST answers; one statement
 * for all of them. Its own subject: a position changes nobody's access, so the gateway keeps its
 * audiences (a create in a server of n roles shifts n).
 */
async function emitShifted(tx: Queryable, ctx: Ctx, shifted: Role[]): Promise<void> {
  await enqueueEvents(
    tx,
    shifted.map((role) => outboxRow('guilds.role.shifted', role, ctx.requestId)),
  );
}

/**
 * Discord's limit, @everyone included, as an import counts it: past it, positions outgrow what
 * PATCH takes and the server's own export could not be imported. Counted under the roles' lock.
 */
async function requireRoomForRole(tx: Queryable, serverId: string): Promise<void> {
  if ((await countRoles(tx, serverId)) >= MAX_SERVER_ROLES) {
    throw badRequest(`A server has at most ${MAX_SERVER_ROLES} roles, @everyone included`);
  }
}

export function createRole(d: Domain, ctx: Ctx, serverId: string, body: CreateRoleBody): Promise<Role> {
  return withRetryingTx(d.pool, async (tx) => {
    const actor = await roleManager(tx, serverId, ctx.userId);
    checkGrant(actor, 0n, BigInt(body.permissions));
    await requireRoomForRole(tx, serverId);
    const { role, shifted } = await insertRoleAtBottom(tx, { id: uuidv7(), serverId, ...body, permissions: BigInt(body.permissions) });
    await emitShifted(tx, ctx, shifted);
    await emit(tx, ctx, 'guilds.role.created', role);
    return role;
  });
}

export function updateRole(d: Domain, ctx: Ctx, serverId: string, roleId: string, patch: UpdateRoleBody): Promise<Role> {
  return withRetryingTx(d.pool, async (tx) => {
    const actor = await roleManager(tx, serverId, ctx.userId);
    const role = await manageableRole(tx, actor, roleId);
    if (isEveryone(role) && (patch.name !== undefined || patch.position !== undefined)) {
      throw badRequest('@everyone keeps its name and position');
    }
    if (patch.permissions !== undefined) checkGrant(actor, BigInt(role.permissions), BigInt(patch.permissions));
    const seesOtherwise = patch.permissions !== undefined && changesViews(BigInt(role.permissions), BigInt(patch.permissions));
    const views = seesOtherwise ? await watchViews(tx, serverId, roleScope(serverId, roleId)) : undefined;
    if (patch.position !== undefined) await reposition(tx, ctx, actor, role, patch.position);
    const { position: _, permissions, ...rest } = patch;
    const updated = await updateRoleRow(tx, roleId, { ...rest, permissions: permissions === undefined ? undefined : String(permissions) });
    await emit(tx, ctx, 'guilds.role.updated', updated);
    await views?.announce(ctx);
    return updated;
  });
}

/** A role may move anywhere below the actor's highest role, and no higher than the top role. */
async function reposition(tx: Queryable, ctx: Ctx, actor: ServerAccess, role: Role, position: number) {
  const top = await highestRolePosition(tx, actor.server.id);
  if (position > top) throw badRequest(`position must be between 1 and ${top}`);
  if (!canManageRoleAt(actor.rank, position)) throw forbidden('You can only move roles below your highest role');
  await emitShifted(tx, ctx, await moveRole(tx, actor.server.id, role.id, role.position, position));
}

export async function deleteRole(d: Domain, ctx: Ctx, serverId: string, roleId: string): Promise<void> {
  await withRetryingTx(d.pool, async (tx) => {
    const actor = await roleManager(tx, serverId, ctx.userId);
    const role = await manageableRole(tx, actor, roleId);
    if (isEveryone(role)) throw badRequest('@everyone cannot be deleted');
    const views = await watchViews(tx, serverId, roleScope(serverId, roleId));
    const { shifted, overrides, wasDjRole } = await deleteRoleRow(tx, serverId, roleId, role.position);
    // As the override route tells it: a client following the events drops what REST no longer answers.
    await enqueueEvents(
      tx,
      overrides.map((override) => outboxRow('guilds.override.deleted', override, ctx.requestId)),
    );
    await emit(tx, ctx, 'guilds.role.deleted', { id: roleId, serverId });
    await views.announce(ctx);
    await emitShifted(tx, ctx, shifted);
    if (wasDjRole) await emit(tx, ctx, 'guilds.server.updated', toServer((await findServer(tx, serverId))!));
  });
}

/** Gives (or takes) a role below the actor's highest to (or from) a member. */
export async function setMemberRole(d: Domain, ctx: Ctx, ids: { serverId: string; userId: string; roleId: string }, give: boolean) {
  // Roles, then the server row (as every role change: the access version's trigger updates it); a
  // server's deletion takes them the other way round, so one of the two may be chosen to give way.
  await withRetryingTx(d.pool, async (tx) => {
    const actor = await roleManager(tx, ids.serverId, ctx.userId);
    const role = await manageableRole(tx, actor, ids.roleId);
    if (isEveryone(role)) throw badRequest('Every member has @everyone');
    // A role below the actor's may still carry bits the actor lacks (ADMINISTRATOR): giving it grants them.
    if (give) checkGrant(actor, 0n, BigInt(role.permissions));
    // As kicks, bans and leaves do: one that is under way finishes first and the member is then not
    // found (rather than the insert failing on its foreign key), and none starts before this commits.
    await lockServer(tx, ids.serverId);
    if (!(await findMember(tx, ids.serverId, ids.userId))) throw notFound('Member');
    const views = await watchViews(tx, ids.serverId, { only: { userIds: [ids.userId], roleIds: [] } });
    const changed = give
      ? await addMemberRole(tx, ids.serverId, ids.userId, ids.roleId)
      : await removeMemberRole(tx, ids.serverId, ids.userId, ids.roleId);
    if (!changed) return;
    await emit(tx, ctx, 'guilds.member.updated', announcedMember((await findMember(tx, ids.serverId, ids.userId))!));
    await views.announce(ctx);
  });
}
