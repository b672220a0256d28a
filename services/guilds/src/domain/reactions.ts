import { type MemberUser, Permission } from '@chat/contracts';
import { notFound, type Queryable, withRetryingTx } from '@chat/kit';
import type { z } from 'zod';
import { findMessage, type StoredMessage } from '../db/messages.ts';
import { messageReactions, reactionUsers } from '../db/reactions.ts';
import { requirePermission } from './access.ts';
import type { Ctx, Domain } from './context.ts';
import { emitMessageEvent, historyAccess, textChannelAccess } from './messages.ts';

/**
 * Reactions, Discord's rules: reacting needs READ_MESSAGE_HISTORY, and ADD_REACTIONS only for an
 * emoji nobody has put on the message yet; adding or removing twice changes nothing.
 */

async function messageIn(
  db: Queryable,
  channelId: string,
  messageId: string,
  options: { lock?: 'key share' } = {},
): Promise<StoredMessage> {
  const message = await findMessage(db, channelId, messageId, options);
  if (!message) throw notFound('Message');
  return message;
}

export async function addMyReaction(d: Domain, ctx: Ctx, channelId: string, messageId: string, emoji: string): Promise<void> {
  const access = await historyAccess(d.pool, channelId, ctx.userId);
  await withRetryingTx(d.pool, async (tx) => {
    // Locked against a concurrent delete, which would otherwise fail the insert on its foreign key (a 500).
    const message = await messageIn(tx, channelId, messageId, { lock: 'key share' });
    const mayAddNew = () => requirePermission(access.channelPermissions, Permission.ADD_REACTIONS, 'ADD_REACTIONS');
    if (!(await messageReactions.add(tx, messageId, emoji, ctx.userId, mayAddNew))) return;
    await emitMessageEvent(tx, ctx, 'guilds.reaction.added', {
      messageId,
      channelId,
      serverId: message.serverId,
      userId: ctx.userId,
      emoji,
    });
  });
}

/** Taking back one's own reaction needs only to see the message. */
export async function removeMyReaction(d: Domain, ctx: Ctx, channelId: string, messageId: string, emoji: string): Promise<void> {
  await textChannelAccess(d.pool, channelId, ctx.userId);
  await withRetryingTx(d.pool, async (tx) => {
    const message = await messageIn(tx, channelId, messageId);
    if (!(await messageReactions.remove(tx, messageId, emoji, ctx.userId))) return;
    await emitMessageEvent(tx, ctx, 'guilds.reaction.removed', {
      messageId,
      channelId,
      serverId: message.serverId,
      userId: ctx.userId,
      emoji,
    });
  });
}

export async function listReactionUsers(
  d: Domain,
  ctx: Ctx,
  channelId: string,
  messageId: string,
  emoji: string,
  page: { limit: number; after?: string | undefined },
): Promise<z.infer<typeof MemberUser>[]> {
  await historyAccess(d.pool, channelId, ctx.userId);
  await messageIn(d.pool, channelId, messageId);
  return reactionUsers(d.pool, messageId, emoji, page);
}
