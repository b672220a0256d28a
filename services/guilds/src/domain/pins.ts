import { type ChannelMessage, MAX_PINS_PER_CHANNEL, Permission } from '@chat/contracts';
import { badRequest, notFound, withRetryingTx } from '@chat/kit';
import { holdChannel } from '../db/channels.ts';
import { countPins, findMessage, lockPins, pinnedMessages, setPinned } from '../db/messages.ts';
import { requirePermission } from './access.ts';
import type { Ctx, Domain } from './context.ts';
import { emitMessageEvent, historyAccess, textChannelAccess, withReactions } from './messages.ts';
import { postPinned } from './system-messages.ts';

/** Pins: at most 50 per channel, newest pin first; pinning needs MANAGE_MESSAGES. */

export async function listPins(d: Domain, ctx: Ctx, channelId: string): Promise<ChannelMessage[]> {
  await historyAccess(d.pool, channelId, ctx.userId);
  return withReactions(d.pool, await pinnedMessages(d.pool, channelId), ctx.userId);
}

/** Pins (`pinned`) or unpins a message; doing either twice changes nothing and sends no event. */
export async function setPin(d: Domain, ctx: Ctx, channelId: string, messageId: string, pinned: boolean): Promise<void> {
  const access = await textChannelAccess(d.pool, channelId, ctx.userId);
  requirePermission(access.channelPermissions, Permission.MANAGE_MESSAGES, 'MANAGE_MESSAGES');
  await withRetryingTx(d.pool, async (tx) => {
    await lockPins(tx, channelId);
    if (!(await holdChannel(tx, channelId))) throw notFound('Channel');
    // Locked: a delete under way is waited for (then 404), rather than a pin announced for a message gone.
    const message = await findMessage(tx, channelId, messageId, { lock: 'no key update' });
    if (!message) throw notFound('Message');
    if (message.pinned === pinned) return;
    if (pinned && (await countPins(tx, channelId)) >= MAX_PINS_PER_CHANNEL) {
      throw badRequest(`A channel can have at most ${MAX_PINS_PER_CHANNEL} pinned messages`);
    }
    await setPinned(tx, messageId, pinned);
    const data = { messageId, channelId, serverId: message.serverId, by: ctx.userId };
    await emitMessageEvent(tx, ctx, pinned ? 'guilds.pin.added' : 'guilds.pin.removed', data);
    if (pinned) await postPinned(tx, ctx, channelId, message.serverId, messageId);
  });
}
