import { type Channel, MAX_SERVER_CHANNELS } from '@chat/contracts';
import { badRequest, enqueueEvent, type Queryable } from '@chat/kit';
import { findChannel } from '../db/channels.ts';
import { channelOrder, compactChannels, countChannelsAndCategories, lockChannelGroups, lockLayout, setChannelOrder } from '../db/layout.ts';

/**
 * Where channels sit among their siblings. Every path that creates, moves or deletes a channel or
 * a category calls lockLayout first and one of these before it commits, so positions stay 0..n-1
 * per category with no gap or duplicate (the database's deferred constraints check it at commit).
 * Siblings that move get their guilds.channel.updated like the channel itself.
 *
 * Locks in one order, so that no two of these wait for each other: the layout lock, then the rows
 * of the channel groups the change writes (lockChannelGroups, before its first channel write: the
 * channel's own fields, its deletion), then the server row, which each channel write updates.
 */

export { lockChannelGroups, lockLayout };

/**
 * Discord's limit, categories included, as an import counts it: past it, a category's reorder and
 * the server's own export could no longer take them all. The caller holds the layout lock, so
 * concurrent creates are counted one after the other.
 */
export async function requireRoomForChannel(tx: Queryable, serverId: string): Promise<void> {
  if ((await countChannelsAndCategories(tx, serverId)) >= MAX_SERVER_CHANNELS) {
    throw badRequest(`A server has at most ${MAX_SERVER_CHANNELS} channels, categories included`);
  }
}

/** The sweeper and the voice paths have no request; the event then carries none. */
type RequestId = string | undefined;

async function emitMoved(tx: Queryable, requestId: RequestId, ids: readonly string[], except?: string): Promise<void> {
  for (const id of ids) {
    if (id === except) continue;
    const channel = await findChannel(tx, id);
    if (channel) await enqueueEvent(tx, 'guilds.channel.updated', channel, requestId);
  }
}

/**
 * Puts `channel` at `position` (clamped to the end; the end when absent) among the channels of
 * `categoryId`, closing the gap it leaves in its old category. The caller holds the layout lock
 * and both groups' rows, and emits the channel's own event.
 */
export async function placeChannel(
  tx: Queryable,
  requestId: RequestId,
  channel: Channel,
  categoryId: string | null,
  position: number | undefined,
): Promise<void> {
  const siblings = (await channelOrder(tx, channel.serverId, categoryId)).filter((id) => id !== channel.id);
  const at = Math.min(position ?? siblings.length, siblings.length);
  siblings.splice(at, 0, channel.id);
  const moved = await setChannelOrder(tx, channel.serverId, categoryId, siblings);
  if (channel.categoryId !== categoryId) moved.push(...(await compactChannels(tx, channel.serverId, channel.categoryId)));
  await emitMoved(tx, requestId, moved, channel.id);
}

/** After a channel left `categoryId` (deleted, its group's rows held): closes the gap, with the siblings' events. */
export async function closeChannelGap(tx: Queryable, requestId: RequestId, serverId: string, categoryId: string | null): Promise<void> {
  await emitMoved(tx, requestId, await compactChannels(tx, serverId, categoryId));
}

/** Reorders a whole category at once, with the events of the channels that moved. */
export async function reorderChannelsIn(
  tx: Queryable,
  requestId: RequestId,
  serverId: string,
  categoryId: string | null,
  orderedIds: string[],
): Promise<void> {
  await lockChannelGroups(tx, serverId, [categoryId]);
  await emitMoved(tx, requestId, await setChannelOrder(tx, serverId, categoryId, orderedIds));
}

/**
 * Before a category goes: its channels join the end of the uncategorised group, in their order,
 * each with its event (the foreign key alone would leave them with clashing positions).
 */
export async function releaseCategoryChannels(tx: Queryable, requestId: RequestId, serverId: string, categoryId: string): Promise<void> {
  await lockChannelGroups(tx, serverId, [null, categoryId]);
  const uncategorised = await channelOrder(tx, serverId, null);
  const released = await channelOrder(tx, serverId, categoryId);
  await emitMoved(tx, requestId, await setChannelOrder(tx, serverId, null, [...uncategorised, ...released]));
}
