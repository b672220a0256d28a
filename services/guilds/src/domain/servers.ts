import type { Server } from '@chat/contracts';
import {
  type CreateServerBody,
  DEFAULT_EVERYONE_PERMISSIONS,
  type DiscoveryServer,
  MANAGE_SERVER,
  type UpdateServerBody,
} from '@chat/contracts';
import { badRequest, conflict, forbidden, type KeyPage, notFound, type Queryable, withRetryingTx, withTx } from '@chat/kit';
import { v7 as uuidv7 } from 'uuid';
import { listMemberMasks } from '../db/audience.ts';
import { isBanned } from '../db/bans.ts';
import { insertCategory } from '../db/categories.ts';
import { findServerChannel, insertChannel } from '../db/channels.ts';
import { isMemberOf } from '../db/members.ts';
import { findServerRole, insertEveryoneRole } from '../db/roles.ts';
import {
  type DiscoveryFilter,
  deleteServer as deleteServerRow,
  discoverServers,
  insertServer,
  listServersOfUser,
  lockServer,
  type ServerRow,
  toServer,
  updateServer as updateServerRow,
} from '../db/servers.ts';
import { memberAccess, requirePermission, serverAccess } from './access.ts';
import { type Ctx, type Domain, emit } from './context.ts';
import { addMember } from './membership.ts';
import { holdEntrance } from './system-messages.ts';
import { endVoiceInDeletedServer } from './voice.ts';

/** A new server: the caller as owner and first member, @everyone, and a category with a text and a voice channel. */
export function createServer(d: Domain, ctx: Ctx, body: CreateServerBody): Promise<Server> {
  return withTx(d.pool, async (tx) => {
    const id = uuidv7();
    const server = toServer(
      await insertServer(tx, {
        id,
        name: body.name,
        description: body.description ?? null,
        iconUrl: body.iconUrl ?? null,
        ownerId: ctx.userId,
        isPublic: body.isPublic,
        requireApproval: body.requireApproval,
        tags: body.tags,
      }),
    );
    await emit(tx, ctx, 'guilds.server.created', server);
    await emit(tx, ctx, 'guilds.role.created', await insertEveryoneRole(tx, id, DEFAULT_EVERYONE_PERMISSIONS));
    await addMember(tx, ctx, id, ctx.userId);
    const category = await insertCategory(tx, { id: uuidv7(), serverId: id, name: 'General' });
    await emit(tx, ctx, 'guilds.category.created', category);
    for (const [name, channelType] of [
      ['general', 'text'],
      ['General', 'voice'],
    ] as const) {
      const channel = await insertChannel(tx, { id: uuidv7(), serverId: id, categoryId: category.id, name, channelType, topic: null });
      await emit(tx, ctx, 'guilds.channel.created', channel);
    }
    return server;
  });
}

export async function listMyServers(d: Domain, ctx: Ctx, page: KeyPage): Promise<Server[]> {
  return (await listServersOfUser(d.pool, ctx.userId, page)).map(toServer);
}

export async function getServer(d: Domain, ctx: Ctx, serverId: string): Promise<Server> {
  return toServer((await serverAccess(d.pool, serverId, ctx.userId)).server);
}

export async function updateServer(d: Domain, ctx: Ctx, serverId: string, patch: UpdateServerBody): Promise<Server> {
  return withRetryingTx(d.pool, async (tx) => {
    const access = await memberAccess(tx, serverId, ctx.userId);
    requirePermission(access.permissions, MANAGE_SERVER, 'MANAGE_SERVER');
    // Locked while checked: two PATCHes must not make the AFK and the join-to-create channel one.
    const current = await lockServer(tx, serverId);
    if (!current) throw notFound('Server');
    await checkChannelRef(tx, serverId, patch.entranceChannelId, 'text', 'entranceChannelId');
    await checkChannelRef(tx, serverId, patch.afkChannelId, 'voice', 'afkChannelId');
    await checkChannelRef(tx, serverId, patch.jtcChannelId, 'voice', 'jtcChannelId');
    checkAfkIsNotJoinToCreate(current, patch);
    await checkRoleRefs(tx, serverId, patch.djRoleIds, 'djRoleIds');
    const server = toServer(await updateServerRow(tx, serverId, patch));
    await emit(tx, ctx, 'guilds.server.updated', server);
    return server;
  });
}

/**
 * A channel a server points at must be one of its own, of the right type, and not a temporary one
 * (it goes when it empties); null clears the pointer.
 */
async function checkChannelRef(
  tx: Queryable,
  serverId: string,
  channelId: string | null | undefined,
  type: 'text' | 'voice',
  field: string,
) {
  if (channelId === undefined || channelId === null) return;
  const channel = await findServerChannel(tx, serverId, channelId);
  if (!channel || channel.channelType !== type) throw badRequest(`${field} must be a ${type} channel of this server`);
  if (channel.isTemporary) throw badRequest(`${field} cannot be a temporary channel: it is deleted when it empties`);
}

/**
 * Nobody stays in the join-to-create channel (joining it makes a new channel), so idle members
 * cannot be moved there: the two must differ once the patch applies. Checked only when the patch
 * sets one of them, so that other changes of a server stored otherwise still pass.
 */
function checkAfkIsNotJoinToCreate(current: ServerRow, patch: UpdateServerBody) {
  if (patch.afkChannelId === undefined && patch.jtcChannelId === undefined) return;
  const afk = patch.afkChannelId === undefined ? current.afk_channel_id : patch.afkChannelId;
  const jtc = patch.jtcChannelId === undefined ? current.jtc_channel_id : patch.jtcChannelId;
  if (afk !== null && afk === jtc) throw badRequest('afkChannelId and jtcChannelId cannot be the same channel');
}

/** Roles a server names must be its own. */
async function checkRoleRefs(tx: Queryable, serverId: string, roleIds: string[] | undefined, field: string) {
  for (const roleId of roleIds ?? []) {
    if (!(await findServerRole(tx, serverId, roleId))) throw badRequest(`${field} must list roles of this server`);
  }
}

export async function deleteServer(d: Domain, ctx: Ctx, serverId: string): Promise<void> {
  // The row, then everything its cascade deletes: the other way round from role and channel changes,
  // which take their rows first and the server row last; whichever of the two is chosen gives way.
  await withRetryingTx(d.pool, async (tx) => {
    // Locked before the members are read, as joins lock it to add one: a join either commits first
    // and is in memberIds (so its member gets SERVER_DELETE), or waits and finds no server. A second
    // deletion waits here too, then finds none: a 404, and no second event.
    if (!(await lockServer(tx, serverId))) throw notFound('Server');
    const access = await serverAccess(tx, serverId, ctx.userId);
    if (!access.isOwner) throw forbidden('Only the owner can delete the server');
    const memberIds = (await listMemberMasks(tx, serverId)).map((m) => m.user_id);
    await endVoiceInDeletedServer(tx, ctx, serverId, memberIds);
    if ((await deleteServerRow(tx, serverId)) === 0) throw notFound('Server');
    await emit(tx, ctx, 'guilds.server.deleted', { id: serverId, memberIds });
  });
}

/** Joining a public server that does not require approval; the statuses are the issue's. */
export function joinServer(d: Domain, ctx: Ctx, serverId: string): Promise<Server> {
  return withRetryingTx(d.pool, async (tx) => {
    await holdEntrance(tx, serverId);
    // The row lock makes a join and a concurrent ban of the same user take turns.
    const row = await lockServer(tx, serverId);
    const member = row ? await isMemberOf(tx, serverId, ctx.userId) : false;
    // A server that is not public is the same 404 as an unknown id to a non-member (as GET answers):
    // "not public" would tell a stranger that it exists.
    if (!row || (!row.is_public && !member)) throw notFound('Server');
    if (member) throw conflict('You are already a member of this server');
    if (await isBanned(tx, serverId, ctx.userId)) throw badRequest('You are banned from this server');
    if (row.require_approval) throw badRequest('This server requires approval; send a join request instead');
    await addMember(tx, ctx, serverId, ctx.userId);
    return toServer(row);
  });
}

export async function discover(d: Domain, filter: DiscoveryFilter): Promise<DiscoveryServer[]> {
  return (await discoverServers(d.pool, filter)).map((row) => ({ ...toServer(row), memberCount: row.member_count }));
}
