import {
  type DirectMessageRecord as DirectMessage,
  type DirectMessageSearchResult,
  type MessageSearchQuery,
  type SendDirectMessageBody,
  SOCIAL_SUBJECTS,
} from '@chat/contracts';
import {
  type Bus,
  badRequest,
  enqueueEvent,
  forbidden,
  markEventsWritten,
  notFound,
  outboxRow,
  type Pool,
  type Queryable,
  type RequestContext,
  withRetryingTx,
  withTx,
} from '@chat/kit';
import {
  assertEditable,
  assertHasBody,
  type Page,
  previewsOfLinksIn,
  resolveAttachments,
  withNonce,
  withReactions,
  writtenMessageType,
} from '@chat/messaging';
import { v7 as uuidv7 } from 'uuid';
import { conversationIdsOf } from '../db/audience.ts';
import type { ConversationAccess } from '../db/conversations.ts';
import {
  deleteMessageRow,
  insertMessage,
  type LockedMessage,
  lockMessage,
  messageById,
  type NewMessage,
  type PostOutcome,
  pageOfMessages,
  postMessageRow,
  type StoredMessage,
  searchMessages,
  updateMessageContent,
} from '../db/messages.ts';
import { dmReactions } from '../db/reactions.ts';
import { assertMayWrite, BLOCKED_MESSAGE, participantAccess } from './conversations.ts';

/** Direct messages: sending, paging, editing, deleting, reacting. */

type Deps = { pool: Pool; bus: Bus };

/** Adds each message's reactions as `viewerId` sees them. */
export function withDmReactions(db: Queryable, messages: StoredMessage[], viewerId: string): Promise<DirectMessage[]> {
  return withReactions(db, dmReactions, messages, viewerId);
}

/**
 * One statement (post_direct_message) decides who may write and writes the message with its event;
 * the service keeps no transaction of its own around it.
 */
export async function sendMessage(deps: Deps, ctx: RequestContext, body: SendDirectMessageBody): Promise<DirectMessage> {
  // Before the statement: no connection is held while the media service answers.
  const attachments = await resolveAttachments(deps.bus, ctx, body.attachments);
  assertHasBody(body.content, attachments);
  const replyToId = body.replyToId ?? null;
  const row: NewMessage = {
    id: uuidv7(),
    conversationId: body.conversationId,
    senderId: ctx.userId,
    content: body.content,
    attachments,
    replyToId,
    type: writtenMessageType(replyToId),
    createdAt: new Date().toISOString(),
  };
  const draft: StoredMessage = {
    id: row.id,
    conversationId: row.conversationId,
    senderId: row.senderId,
    content: row.content,
    attachments,
    replyToId,
    editedAt: null,
    createdAt: row.createdAt,
    // Filled in by the statement, from the users read-model and the conversation.
    senderName: UNKNOWN_SENDER,
    senderAvatar: null,
    senderBadges: [],
    type: row.type,
    embeds: [],
    call: null,
  };
  const event = outboxRow(
    SOCIAL_SUBJECTS.dmCreated,
    { message: withNonce(draft, body.nonce), participantIds: [ctx.userId] },
    ctx.requestId,
  );
  const outcome = await postMessageRow(deps.pool, row, event);
  if (outcome.outcome !== 'posted') throw refusal(outcome.outcome);
  markEventsWritten(deps.pool);
  const { sender } = outcome;
  const stored = {
    ...draft,
    id: outcome.id,
    senderName: sender.name ?? UNKNOWN_SENDER,
    senderAvatar: sender.avatar,
    senderBadges: sender.badges ?? [],
  };
  return { ...withNonce(stored, body.nonce), reactions: {} };
}

function refusal(outcome: Exclude<PostOutcome['outcome'], 'posted'>): Error {
  if (outcome === 'not_found') return notFound('Conversation');
  if (outcome === 'blocked') return forbidden(BLOCKED_MESSAGE);
  return badRequest('body.replyToId: no such message in this conversation');
}

// As toMessage in db/messages.ts: a sender whose auth event has not reached us yet.
const UNKNOWN_SENDER = 'Unknown user';

/**
 * A message the platform adds to a conversation itself (a call's), inside the caller's transaction,
 * published as `social.dm.created` (DM_MESSAGE_CREATE) to `access.audienceIds`. People's messages
 * take the one-statement path of sendMessage.
 */
export async function writeMessage(
  tx: Queryable,
  requestId: string | undefined,
  access: Pick<ConversationAccess, 'id' | 'audienceIds'>,
  message: Omit<NewMessage, 'id' | 'conversationId' | 'createdAt'>,
): Promise<StoredMessage> {
  const stored = await insertMessage(tx, { ...message, id: uuidv7(), conversationId: access.id, createdAt: new Date().toISOString() });
  await enqueueEvent(tx, SOCIAL_SUBJECTS.dmCreated, { message: stored, participantIds: access.audienceIds }, requestId);
  return stored;
}

/** A page, newest first. */
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
    // Their author is the caller: without this, the caller could rewrite what the platform said.
    assertEditable(current.type);
    assertHasBody(content, current.attachments);
    // A link no longer in the text loses its preview (a bank's preview must not stay on a phishing link).
    const embeds = previewsOfLinksIn(content, current.embeds);
    const message = await updateMessageContent(tx, messageId, { content, embeds });
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
  // Retried when the message's deletion lands between the read and the insert: then it is 404.
  await withRetryingTx(deps.pool, async (tx) => {
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
