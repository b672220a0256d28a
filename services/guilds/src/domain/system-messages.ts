import type { Queryable } from '@chat/kit';
import { findChannel, holdChannel } from '../db/channels.ts';
import { findServer } from '../db/servers.ts';
import type { Ctx } from './context.ts';
import { NO_MENTIONS } from './mentions.ts';
import { postMessage } from './messages.ts';

/**
 * System messages, as Discord posts them: written by the one path that creates messages, with the
 * acting user as author, empty content and their own `type`.
 */

/**
 * Locks the server's entrance channel against deletion, before the caller locks the server row:
 * a channel's deletion locks the channel, then the server row (its foreign key's SET NULL), so a
 * join that locked the server and then posted its member_join into the channel would deadlock with it.
 */
export async function holdEntrance(tx: Queryable, serverId: string): Promise<void> {
  const entranceId = (await findServer(tx, serverId))?.entrance_channel_id;
  if (entranceId) await holdChannel(tx, entranceId);
}

/** `member_join` in the server's entrance channel, if it is set and still a text channel. */
export async function postMemberJoin(tx: Queryable, ctx: Pick<Ctx, 'requestId'>, serverId: string, userId: string): Promise<void> {
  const entranceId = (await findServer(tx, serverId))?.entrance_channel_id;
  if (!entranceId) return;
  const channel = await findChannel(tx, entranceId);
  if (channel?.channelType !== 'text') return;
  await postMessage(tx, ctx, systemMessage(channel.id, serverId, userId, 'member_join', null));
}

/** `pinned` in the channel of the pinned message, by who pinned it, pointing at it (replyToId). */
export async function postPinned(tx: Queryable, ctx: Ctx, channelId: string, serverId: string, messageId: string): Promise<void> {
  await postMessage(tx, ctx, systemMessage(channelId, serverId, ctx.userId, 'pinned', messageId));
}

function systemMessage(channelId: string, serverId: string, authorId: string, type: 'member_join' | 'pinned', replyToId: string | null) {
  return { channelId, serverId, authorId, content: '', attachments: {}, replyToId, mentions: NO_MENTIONS, type };
}
