import type { Channel } from '@chat/contracts';
import { type CreateChannelBody, Permission, type UpdateChannelBody } from '@chat/contracts';
import { badRequest, type Queryable, withTx } from '@chat/kit';
import { v7 as uuidv7 } from 'uuid';
import { findCategory } from '../db/categories.ts';
import { deleteChannel as deleteChannelRow, insertChannel, updateChannel as updateChannelRow } from '../db/channels.ts';
import { findServer, toServer } from '../db/servers.ts';
import { channelAccess, memberAccess, requirePermission, visibleChannels } from './access.ts';
import { type Ctx, type Domain, emit } from './context.ts';
import { isOwnerEditOfTemporaryChannel } from './temporary-channels.ts';

export function createChannel(d: Domain, ctx: Ctx, serverId: string, body: CreateChannelBody): Promise<Channel> {
  return withTx(d.pool, async (tx) => {
    const access = await memberAccess(tx, serverId, ctx.userId);
    requirePermission(access.permissions, Permission.MANAGE_CHANNELS, 'MANAGE_CHANNELS');
    const categoryId = body.categoryId ?? null;
    await checkCategory(tx, serverId, categoryId);
    const channel = await insertChannel(tx, {
      id: uuidv7(),
      serverId,
      categoryId,
      name: body.name,
      channelType: body.channelType,
      topic: body.topic ?? null,
    });
    await emit(tx, ctx, 'guilds.channel.created', channel);
    return channel;
  });
}

/** A category named in a body must be one of this server's: an id from another server is a 400. */
async function checkCategory(tx: Queryable, serverId: string, categoryId: string | null) {
  if (categoryId !== null && !(await findCategory(tx, serverId, categoryId))) {
    throw badRequest('categoryId is not a category of this server');
  }
}

export async function listVisibleChannels(d: Domain, ctx: Ctx, serverId: string): Promise<Channel[]> {
  const access = await memberAccess(d.pool, serverId, ctx.userId);
  return (await visibleChannels(d.pool, access)).map((c) => c.channel);
}

export async function getChannel(d: Domain, ctx: Ctx, channelId: string): Promise<Channel> {
  return (await channelAccess(d.pool, channelId, ctx.userId)).channel;
}

export async function myChannelPermissions(d: Domain, ctx: Ctx, channelId: string): Promise<bigint> {
  return (await channelAccess(d.pool, channelId, ctx.userId)).channelPermissions;
}

export function updateChannel(d: Domain, ctx: Ctx, channelId: string, patch: UpdateChannelBody): Promise<Channel> {
  return withTx(d.pool, async (tx) => {
    const access = await channelAccess(tx, channelId, ctx.userId);
    if (!isOwnerEditOfTemporaryChannel(access.channel, ctx.userId, patch)) {
      requirePermission(access.channelPermissions, Permission.MANAGE_CHANNELS, 'MANAGE_CHANNELS');
    }
    if (patch.userLimit !== undefined && access.channel.channelType !== 'voice') {
      throw badRequest('userLimit applies to voice channels only');
    }
    if (patch.categoryId !== undefined) await checkCategory(tx, access.channel.serverId, patch.categoryId);
    const channel = await updateChannelRow(tx, channelId, patch);
    await emit(tx, ctx, 'guilds.channel.updated', channel);
    return channel;
  });
}

export async function deleteChannel(d: Domain, ctx: Ctx, channelId: string): Promise<void> {
  await withTx(d.pool, async (tx) => {
    const access = await channelAccess(tx, channelId, ctx.userId);
    requirePermission(access.channelPermissions, Permission.MANAGE_CHANNELS, 'MANAGE_CHANNELS');
    await deleteChannelRow(tx, channelId);
    await emit(tx, ctx, 'guilds.channel.deleted', { id: channelId, serverId: access.channel.serverId });
    // The foreign keys cleared the server's pointers to this channel; say so to those who keep servers.
    const { entrance_channel_id, afk_channel_id, jtc_channel_id } = access.server;
    if ([entrance_channel_id, afk_channel_id, jtc_channel_id].includes(channelId)) {
      await emit(tx, ctx, 'guilds.server.updated', toServer((await findServer(tx, access.server.id))!));
    }
  });
}
