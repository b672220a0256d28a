import type { EmbedsResolved } from '@chat/contracts';
import type { Queryable } from '@chat/kit';
import { embedsWithResolved } from '@chat/messaging';
import { findMessage, setMessageEmbeds } from '../db/messages.ts';
import { emitMessageEvent } from './messages.ts';

/**
 * Stores the link previews media resolved for a channel message and announces the message as
 * updated (MESSAGE_UPDATE on the socket). Media resolves the links of the text as posted or edited;
 * a preview whose link the message no longer has (edited meanwhile) is not stored, so an edit from a
 * bank's link to another never shows the bank's preview. Previews that change nothing, a message
 * deleted meanwhile, or another service's target, change nothing and announce nothing.
 */
export async function storeChannelEmbeds(tx: Queryable, resolved: EmbedsResolved): Promise<void> {
  if (resolved.target.kind !== 'channel') return;
  const { channelId, messageId } = resolved.target;
  // Locked: an edit waits for this, or this reads the edited text.
  const current = await findMessage(tx, channelId, messageId, { lock: 'no key update' });
  if (!current) return;
  const embeds = embedsWithResolved(current.content, current.embeds, resolved.embeds);
  if (!embeds) return;
  const message = await setMessageEmbeds(tx, channelId, messageId, embeds);
  if (message) await emitMessageEvent(tx, { requestId: '' }, 'guilds.message.updated', message);
}
