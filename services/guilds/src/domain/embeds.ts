import type { EmbedsResolved } from '@chat/contracts';
import type { Queryable } from '@chat/kit';
import { setMessageEmbeds } from '../db/messages.ts';
import { emitMessageEvent } from './messages.ts';

/**
 * Stores the link previews media resolved for a channel message and announces the message as
 * updated (MESSAGE_UPDATE on the socket). A message deleted meanwhile, or another service's
 * target, changes nothing.
 */
export async function storeChannelEmbeds(tx: Queryable, resolved: EmbedsResolved): Promise<void> {
  if (resolved.target.kind !== 'channel') return;
  const { channelId, messageId } = resolved.target;
  const message = await setMessageEmbeds(tx, channelId, messageId, resolved.embeds);
  if (message) await emitMessageEvent(tx, { requestId: '' }, 'guilds.message.updated', message);
}
