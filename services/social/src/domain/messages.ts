import {
  type DirectMessageRecord as DirectMessage,
  type DirectMessageSearchResult,
  type MessageSearchQuery,
  type SendDirectMessageBody,
  SOCIAL_SUBJECTS,
} from '@chat/contracts';
import { type Bus, badRequest, enqueueEvent, forbidden, notFound, type Pool, type Queryable, type RequestContext, withTx } from '@chat/kit';
import { assertHasBody, nextMessageId, type Page, resolveAttachments, withNonce, withReactions, writtenMessageType } from '@chat/messaging';
import { conversationIdsOf } from '../db/audience.ts';
import { markActivity } from '../db/conversations.ts';
import {
  deleteMessageRow,
  insertMessage,
  isMessageOf,
  type LockedMessage,
  lockMessage,
  messageById,
  pageOfMessages,
  type StoredMessage,
  searchMessages,
  updateMessageContent,
} from '../db/messages.ts';
import { dmReactions } from '../db/reactions.ts';
import { assertMayWrite, participantAccess } from './conversations.ts';

/** Direct messages: sending, paging, editing, deleting, reacting. */

type Deps = { pool: Pool; bus: Bus };

/** Adds each message's reactions as `viewerId` sees them. */
export function withDmReactions(db: Queryable, messages: StoredMessage[], viewerId: string): Promise<DirectMessage[]> {
  return withReactions(db, dmReactions, messages, viewerId);
}

export async function sendMessage(deps: Deps, ctx: RequestContext, body: SendDirectMessageBody): Promise<DirectMessage> {
  // Before the transaction: no row lock is held while the media service answers.
  const attachments = await resolveAttachments(deps.bus, ctx, body.attachments);
  assertHasBody(body.content, attachments);
  const message = await withTx(deps.pool, async (tx) => {
    const access = await participantAccess(tx, ctx, body.conversationId, { lock: true });
    assertMayWrite(access);
    if (body.replyToId && !(await isMessageOf(tx, body.replyToId, access.id))) {
      throw badRequest('body.replyToId: no such message in this conversation');
    }
    const replyToId = body.replyToId ?? null;
    const inserted = await insertMessage(tx, {
      id: nextMessageId(access.lastMessageId),
      conversationId: access.id,
      senderId: ctx.userId,
      content: body.content,
      attachments,
      replyToId,
      type: writtenMessageType(replyToId),
    });
    const stored = withNonce(inserted, body.nonce);
    await markActivity(tx, access.id, stored.id, stored.createdAt);
    await enqueueEvent(tx, SOCIAL_SUBJECTS.dmCreated, { message: stored, participantIds: access.audienceIds }, ctx.requestId);
    return stored;
  });
  return { ...message, reactions: {} };
}

export async function listMessages(deps: Deps, ctx: RequestContext, conversationId: string, page: Page): Promise<DirectMessage[]> {
  const access = await participantAccess(deps.pool, ctx, conversationId);
  return withDmReactions(deps.pool, await pageOfMessages(deps.pool, access.id, ctx.userId, page), ctx.userId);
}

/** Search of the caller's own conversations: only those they take part in now are read. */
export async function searchDirectMessages(deps: Deps, ctx: RequestContext, query: MessageSearchQuery): Promise<DirectMessageSearchResult> {
  const conversationIds = await conversationIdsOf(deps.pool, ctx.userId);
  const found = await searchMessages(deps.pool, conversationIds, ctx.userId, { text: query.q, page: query });
  return { total: found.total, messages: await withDmReactions(deps.pool, found.messages, ctx.userId) };
}

/**
 * Runs a change of the caller's own message: 404 when the caller cannot see the message (not a
 * participant), 403 when it is someone else's.
 */
async function changeOwnMessage<T>(
  deps: Deps,
  ctx: RequestContext,
  messageId: string,
  change: (tx: Queryable, message: LockedMessage, audienceIds: string[]) => Promise<T>,
): Promise<T> {
  return withTx(deps.pool, async (tx) => {
    const message = await lockMessage(tx, messageId);
    if (!message) throw notFound('Message');
    const access = await participantAccess(tx, ctx, message.conversationId, { what: 'Message' });
    if (message.senderId !== ctx.userId) throw forbidden('You can only change your own messages');
    return change(tx, message, access.audienceIds);
  });
}

export async function editMessage(deps: Deps, ctx: RequestContext, messageId: string, content: string): Promise<DirectMessage> {
  const updated = await changeOwnMessage(deps, ctx, messageId, async (tx, current, participantIds) => {
    assertHasBody(content, current.attachments);
    const message = await updateMessageContent(tx, messageId, content);
    await enqueueEvent(tx, SOCIAL_SUBJECTS.dmUpdated, { message, participantIds }, ctx.requestId);
    return message;
  });
  const [withTheirReactions] = await withDmReactions(deps.pool, [updated], ctx.userId);
  return withTheirReactions!;
}

export async function deleteMessage(deps: Deps, ctx: RequestContext, messageId: string): Promise<void> {
  await changeOwnMessage(deps, ctx, messageId, async (tx, message, participantIds) => {
    await deleteMessageRow(tx, messageId);
    const data = { id: messageId, conversationId: message.conversationId, participantIds };
    await enqueueEvent(tx, SOCIAL_SUBJECTS.dmDeleted, data, ctx.requestId);
  });
}

/** Adds (`add`) or takes back the caller's reaction; repeating either changes nothing and sends no event. */
export async function react(deps: Deps, ctx: RequestContext, messageId: string, emoji: string, add: boolean): Promise<void> {
  await withTx(deps.pool, async (tx) => {
    const message = await messageById(tx, messageId);
    if (!message) throw notFound('Message');
    const access = await participantAccess(tx, ctx, message.conversationId, { what: 'Message' });
    if (add) assertMayWrite(access);
    const changed = add
      ? await dmReactions.add(tx, messageId, emoji, ctx.userId)
      : await dmReactions.remove(tx, messageId, emoji, ctx.userId);
    if (!changed) return;
    await enqueueEvent(
      tx,
      add ? SOCIAL_SUBJECTS.dmReactionAdded : SOCIAL_SUBJECTS.dmReactionRemoved,
      { messageId, conversationId: message.conversationId, userId: ctx.userId, emoji, participantIds: access.audienceIds },
      ctx.requestId,
    );
  });
}
