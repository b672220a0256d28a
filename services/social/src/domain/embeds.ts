import { type EmbedsResolved, SOCIAL_SUBJECTS } from '@chat/contracts';
import { enqueueEvent, type Queryable } from '@chat/kit';
import { embedsWithResolved } from '@chat/messaging';
import { lockMessage, setMessageEmbeds } from '../db/messages.ts';

/**
 * Stores the link previews media resolved for a direct message and announces the message as
 * updated (DM_MESSAGE_UPDATE on the socket) to those its sending reached who are still in the
 * conversation (the sender too, unless they left). Media resolves the links of the text as sent or
 * edited; a preview whose link the message no longer has (edited meanwhile) is not stored, so an
 * edit from a bank's link to another never shows the bank's preview. Previews that change nothing,
 * a message deleted meanwhile, or another service's target, change nothing and announce nothing.
 */
export async function storeDirectEmbeds(tx: Queryable, resolved: EmbedsResolved): Promise<void> {
  if (resolved.target.kind !== 'dm') return;
  const { conversationId, messageId } = resolved.target;
  // Locked: an edit waits for this, or this reads the edited text.
  const current = await lockMessage(tx, messageId);
  if (current?.conversationId !== conversationId) return;
  const embeds = embedsWithResolved(current.content, current.embeds, resolved.embeds);
  if (!embeds) return;
  const stored = await setMessageEmbeds(tx, conversationId, messageId, embeds);
  if (!stored) return;
  await enqueueEvent(tx, SOCIAL_SUBJECTS.dmUpdated, { message: stored.message, participantIds: stored.audienceIds });
}
