import { type EmbedsResolved, SOCIAL_SUBJECTS } from '@chat/contracts';
import { enqueueEvent, type Queryable } from '@chat/kit';
import { previewsOfLinksIn } from '@chat/messaging';
import { conversationForParticipant } from '../db/conversations.ts';
import { lockMessage, setMessageEmbeds } from '../db/messages.ts';

/**
 * Stores the link previews media resolved for a direct message and announces the message as
 * updated (DM_MESSAGE_UPDATE on the socket) to the same people its sending reached. Media resolves
 * the text the message was sent with; a preview whose link the message no longer has (edited
 * meanwhile) is not stored, so an edit from a bank's link to another never shows the bank's
 * preview. A message deleted meanwhile, or another service's target, changes nothing.
 */
export async function storeDirectEmbeds(tx: Queryable, resolved: EmbedsResolved): Promise<void> {
  if (resolved.target.kind !== 'dm') return;
  const { conversationId, messageId } = resolved.target;
  // Locked: an edit waits for this, or this reads the edited text.
  const current = await lockMessage(tx, messageId);
  if (current?.conversationId !== conversationId) return;
  const embeds = previewsOfLinksIn(current.content, resolved.embeds);
  if (embeds.length === 0) return;
  const message = await setMessageEmbeds(tx, conversationId, messageId, embeds);
  if (!message) return;
  const access = await conversationForParticipant(tx, conversationId, message.senderId);
  const participantIds = access?.audienceIds ?? [message.senderId];
  await enqueueEvent(tx, SOCIAL_SUBJECTS.dmUpdated, { message, participantIds });
}
