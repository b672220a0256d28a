import { type EmbedsResolved, SOCIAL_SUBJECTS } from '@chat/contracts';
import { enqueueEvent, type Queryable } from '@chat/kit';
import { conversationForParticipant } from '../db/conversations.ts';
import { setMessageEmbeds } from '../db/messages.ts';

/**
 * Stores the link previews media resolved for a direct message and announces the message as
 * updated (DM_MESSAGE_UPDATE on the socket) to the same people its sending reached. A message
 * deleted meanwhile, or another service's target, changes nothing.
 */
export async function storeDirectEmbeds(tx: Queryable, resolved: EmbedsResolved): Promise<void> {
  if (resolved.target.kind !== 'dm') return;
  const { conversationId, messageId } = resolved.target;
  const message = await setMessageEmbeds(tx, conversationId, messageId, resolved.embeds);
  if (!message) return;
  const access = await conversationForParticipant(tx, conversationId, message.senderId);
  const participantIds = access?.audienceIds ?? [message.senderId];
  await enqueueEvent(tx, SOCIAL_SUBJECTS.dmUpdated, { message, participantIds });
}
