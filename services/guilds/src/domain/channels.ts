import type { Channel } from '@chat/contracts';
import { type CreateChannelBody, Permission, type UpdateChannelBody } from '@chat/contracts';
import { badRequest, forbidden, notFound, type Queryable, withRetryingTx } from '@chat/kit';
import { v7 as uuidv7 } from 'uuid';
import { holdCategory } from '../db/categories.ts';
import { deleteChannel as deleteChannelRow, findChannel, insertChannel, updateChannel as updateChannelRow } from '../db/channels.ts';
import { channelOrder } from '../db/layout.ts';
import { findServer, toServer } from '../db/servers.ts';
import { channelAccess, memberAccess, requirePermission, type ServerAccess, visibleChannels } from './access.ts';
import { channelViewers } from './audience.ts';
import { type Ctx, type Domain, emit } from './context.ts';
import { closeChannelGap, lockChannelGroups, lockLayout, placeChannel, reorderChannelsIn, requireRoomForChannel } from './layout.ts';
import { has } from './permissions.ts';
import { isOwnerEditOfTemporaryChannel } from './temporary-channels.ts';
import { watchViews } from './view-changes.ts';
import { endVoiceInDeletedChannel } from './voice.ts';

/**
 * A change of a category's channel layout: MANAGE_CHANNELS, the server's layout lock, then a
 * category of this server (or none). Answers the access and the category id (null: uncategorised).
 */
async function lockCategoryLayout(tx: Queryable, ctx: Ctx, serverId: string, given: string | null | undefined) {
  const access = await memberAccess(tx, serverId, ctx.userId);
  requirePermission(access.permissions, Permission.MANAGE_CHANNELS, 'MANAGE_CHANNELS');
  const categoryId = given ?? null;
  await lockLayout(tx, serverId);
  await checkCategory(tx, serverId, categoryId);
  return { access, categoryId };
}

export function createChannel(d: Domain, ctx: Ctx, serverId: string, body: CreateChannelBody): Promise<Channel> {
  return withRetryingTx(d.pool, async (tx) => {
    const { categoryId } = await lockCategoryLayout(tx, ctx, serverId, body.categoryId);
    await requireRoomForChannel(tx, serverId);
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

/**
 * A category named in a body must be one of this server's: an id from another server is a 400, as
 * is one deleted meanwhile. Checked under the layout lock (deletes take it first, so taken before
 * the category's row lock it cannot deadlock with one), and the category stays until the write.
 */
async function checkCategory(tx: Queryable, serverId: string, categoryId: string | null) {
  if (categoryId !== null && !(await holdCategory(tx, serverId, categoryId))) {
    throw badRequest('categoryId is not a category of this server');
  }
}

export async function listVisibleChannels(d: Domain, ctx: Ctx, serverId: string): Promise<Channel[]> {
  const access = await memberAccess(d.pool, serverId, ctx.userId);
  return (await visibleChannels(d.pool, access, d.channelLists)).map((c) => c.channel);
}

export async function getChannel(d: Domain, ctx: Ctx, channelId: string): Promise<Channel> {
  return (await channelAccess(d.pool, channelId, ctx.userId, undefined, d.channelLists)).channel;
}

export function updateChannel(d: Domain, ctx: Ctx, channelId: string, patch: UpdateChannelBody): Promise<Channel> {
  return withRetryingTx(d.pool, async (tx) => {
    const access = await channelAccess(tx, channelId, ctx.userId);
    if (!isOwnerEditOfTemporaryChannel(access.channel, ctx.userId, patch)) {
      requirePermission(access.channelPermissions, Permission.MANAGE_CHANNELS, 'MANAGE_CHANNELS');
    }
    if (patch.userLimit !== undefined && access.channel.channelType !== 'voice') {
      throw badRequest('userLimit applies to voice channels only');
    }
    const hiding = patch.isHidden !== undefined && patch.isHidden !== access.channel.isHidden;
    const views = hiding ? await watchViews(tx, access.channel.serverId, { channelId }) : undefined;
    const { position, categoryId, ...fields } = patch;
    const moving = position !== undefined || (categoryId !== undefined && categoryId !== access.channel.categoryId);
    // A move takes its locks before the row's own write (domain/layout.ts says in which order).
    const current = moving ? await lockMove(tx, access.channel, categoryId) : undefined;
    let channel = await updateChannelRow(tx, channelId, fields);
    if (current) {
      await placeChannel(tx, ctx.requestId, current, categoryId === undefined ? current.categoryId : categoryId, position);
      channel = (await findChannel(tx, channelId))!;
    }
    await emit(tx, ctx, 'guilds.channel.updated', channel);
    await views?.announce(ctx);
    return channel;
  });
}

/**
 * The locks of a channel's move, in the layout's order: the layout lock, the target category, then
 * the rows of the channel's group and of the target's. Answers the channel as it is now: re-read
 * under the lock, since a concurrent move may have changed its place.
 */
async function lockMove(tx: Queryable, channel: Channel, categoryId: string | null | undefined): Promise<Channel> {
  await lockLayout(tx, channel.serverId);
  if (categoryId !== undefined) await checkCategory(tx, channel.serverId, categoryId);
  const current = await findChannel(tx, channel.id);
  if (!current) throw notFound('Channel');
  await lockChannelGroups(tx, current.serverId, [current.categoryId, categoryId === undefined ? current.categoryId : categoryId]);
  return current;
}

export async function deleteChannel(d: Domain, ctx: Ctx, channelId: string): Promise<void> {
  await withRetryingTx(d.pool, async (tx) => {
    const access = await channelAccess(tx, channelId, ctx.userId);
    requirePermission(access.channelPermissions, Permission.MANAGE_CHANNELS, 'MANAGE_CHANNELS');
    await lockLayout(tx, access.server.id);
    // Gone once the lock is ours: a concurrent deletion won, and this one answers as if it came after.
    const current = await findChannel(tx, channelId);
    if (!current) throw notFound('Channel');
    await lockChannelGroups(tx, current.serverId, [current.categoryId]);
    const viewers = await channelViewers(tx, channelId);
    await endVoiceInDeletedChannel(tx, ctx, current, viewers.userIds);
    if ((await deleteChannelRow(tx, channelId)) === 0) throw notFound('Channel');
    await emit(tx, ctx, 'guilds.channel.deleted', { id: channelId, serverId: viewers.serverId, viewerIds: viewers.userIds });
    await closeChannelGap(tx, ctx.requestId, current.serverId, current.categoryId);
    // The foreign keys cleared the server's pointers to this channel; say so to those who keep servers.
    const { entrance_channel_id, afk_channel_id, jtc_channel_id } = access.server;
    if ([entrance_channel_id, afk_channel_id, jtc_channel_id].includes(channelId)) {
      await emit(tx, ctx, 'guilds.server.updated', toServer((await findServer(tx, access.server.id))!));
    }
  });
}

/**
 * Reorders the channels of one category (absent or null: the uncategorised ones) at once. Takes
 * exactly that category's set of channel ids in the new order; any other set changes nothing.
 */
export function reorderChannels(
  d: Domain,
  ctx: Ctx,
  serverId: string,
  body: { channelIds: string[]; categoryId?: string | null },
): Promise<Channel[]> {
  return withRetryingTx(d.pool, async (tx) => {
    const { access, categoryId } = await lockCategoryLayout(tx, ctx, serverId, body.categoryId);
    const current = await channelOrder(tx, serverId, categoryId);
    if (!isPermutationOf(body.channelIds, current)) {
      throw badRequest('channelIds must list each channel of that category exactly once');
    }
    await requireManageOfMoved(tx, access, current, body.channelIds);
    await reorderChannelsIn(tx, ctx.requestId, serverId, categoryId, body.channelIds);
    const visible = await visibleChannels(tx, access);
    return visible.map((c) => c.channel).filter((c) => c.categoryId === categoryId);
  });
}

/**
 * The server-level MANAGE_CHANNELS lets the caller reorder; as Discord does, each channel whose
 * position changes needs it in that channel too, where an override may deny it (as PATCH
 * channels/{id} {position} does).
 */
async function requireManageOfMoved(tx: Queryable, access: ServerAccess, current: string[], ordered: string[]): Promise<void> {
  const masks = new Map((await visibleChannels(tx, access)).map((c) => [c.channel.id, c.permissions]));
  const denied = ordered.find((id, i) => id !== current[i] && !has(masks.get(id) ?? 0n, Permission.MANAGE_CHANNELS));
  if (denied) throw forbidden(`Missing permission MANAGE_CHANNELS in channel ${denied}`);
}

export function isPermutationOf(given: readonly string[], actual: readonly string[]): boolean {
  const wanted = new Set(actual);
  return given.length === actual.length && new Set(given).size === given.length && given.every((id) => wanted.has(id));
}
