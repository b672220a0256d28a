import {
  type ChannelMessage,
  type ChannelMessagesQuery,
  type MESSAGES_EVENTS,
  type MessageMentions,
  Permission,
  type SendMessageBody,
} from '@chat/contracts';
import { badRequest, enqueueEvent, forbidden, notFound, type Queryable, tooManyRequests, withTx } from '@chat/kit';
import {
  assertHasBody,
  nextMessageId,
  resolveAttachments,
  withNonce,
  withReactions as withViewerReactions,
  writtenMessageType,
} from '@chat/messaging';
import type { z } from 'zod';
import {
  claimSlowmodeSlot,
  deleteMessageRow,
  findMessage,
  insertMessage,
  latestMessageId,
  lockChannelForRead,
  lockChannelForWrite,
  messageExists,
  type NewMessage,
  pageOfMessages,
  type StoredMessage,
  updateContent,
} from '../db/messages.ts';
import { messageReactions } from '../db/reactions.ts';
import { type ChannelAccess, channelAccess, requirePermission } from './access.ts';
import type { ChannelLists } from './channel-list.ts';
import type { Ctx, Domain } from './context.ts';
import { parseMentions, resolveMentions } from './mentions.ts';
import { has } from './permissions.ts';

/** Channel messages: posting (by members and by webhooks), paging, editing, deleting. */

type Subject = keyof typeof MESSAGES_EVENTS;

/** Writes a messages-area event into the outbox of the caller's transaction; the payload type follows the subject. */
export function emitMessageEvent<S extends Subject>(
  tx: Queryable,
  ctx: Pick<Ctx, 'requestId'>,
  subject: S,
  data: z.input<(typeof MESSAGES_EVENTS)[S]>,
): Promise<string> {
  return enqueueEvent(tx, subject, data, ctx.requestId);
}

/** Access to a text channel the caller can view (404 otherwise, as channelAccess); messages live only there. */
export async function textChannelAccess(db: Queryable, channelId: string, userId: string, lists?: ChannelLists): Promise<ChannelAccess> {
  const access = await channelAccess(db, channelId, userId, undefined, lists);
  if (access.channel.channelType !== 'text') throw badRequest('Messages belong in text channels');
  return access;
}

/**
 * Access for reading a channel's history: VIEW_CHANNEL (else 404) and READ_MESSAGE_HISTORY (else
 * 403). Reads pass the kept channel lists.
 */
export async function historyAccess(db: Queryable, channelId: string, userId: string, lists?: ChannelLists): Promise<ChannelAccess> {
  const access = await textChannelAccess(db, channelId, userId, lists);
  requirePermission(access.channelPermissions, Permission.READ_MESSAGE_HISTORY, 'READ_MESSAGE_HISTORY');
  return access;
}

/** Adds each message's reactions as `viewerId` sees them. */
export function withReactions(db: Queryable, messages: StoredMessage[], viewerId: string | null): Promise<ChannelMessage[]> {
  return withViewerReactions(db, messageReactions, messages, viewerId);
}

/**
 * Inserts a message under the channel's write lock and records its event (with the client's nonce,
 * when given): the one way a message is created.
 */
export async function postMessage(
  tx: Queryable,
  ctx: Pick<Ctx, 'requestId'>,
  message: Omit<NewMessage, 'id' | 'type'> & { type?: NewMessage['type'] },
  nonce?: string,
): Promise<StoredMessage> {
  await lockChannelForWrite(tx, message.channelId);
  const id = nextMessageId(await latestMessageId(tx, message.channelId));
  // A system message names its type; what a person writes is a reply or a default message.
  const type = message.type ?? writtenMessageType(message.replyToId);
  const stored = withNonce(await insertMessage(tx, { ...message, id, type }), nonce);
  await emitMessageEvent(tx, ctx, 'guilds.message.created', stored);
  return stored;
}

export async function sendMessage(d: Domain, ctx: Ctx, channelId: string, body: SendMessageBody): Promise<ChannelMessage> {
  const access = await textChannelAccess(d.pool, channelId, ctx.userId);
  const mask = access.channelPermissions;
  requirePermission(mask, Permission.SEND_MESSAGES, 'SEND_MESSAGES');
  if (body.attachments && Object.keys(body.attachments).length > 0) requirePermission(mask, Permission.ATTACH_FILES, 'ATTACH_FILES');
  // Before the transaction: no connection is held while the media service answers.
  const attachments = await resolveAttachments(d.bus, ctx, body.attachments);
  assertHasBody(body.content, attachments);
  const stored = await withTx(d.pool, async (tx) => {
    await enforceSlowmode(tx, access, ctx.userId);
    if (body.replyToId && !(await messageExists(tx, channelId, body.replyToId))) {
      throw badRequest('body.replyToId: no such message in this channel');
    }
    const mentions = await resolveMentions(
      tx,
      access.channel.serverId,
      parseMentions(body.content),
      has(mask, Permission.MENTION_EVERYONE),
    );
    return postMessage(
      tx,
      ctx,
      {
        channelId,
        serverId: access.channel.serverId,
        authorId: ctx.userId,
        content: body.content,
        attachments,
        replyToId: body.replyToId ?? null,
        mentions,
      },
      body.nonce,
    );
  });
  return { ...stored, reactions: {} };
}

/** Slowmode per member: a second message within the channel's slowmodeSeconds is a 429, unless the member moderates. */
async function enforceSlowmode(tx: Queryable, access: ChannelAccess, userId: string): Promise<void> {
  const seconds = access.channel.slowmodeSeconds;
  if (seconds <= 0) return;
  const mask = access.channelPermissions;
  if (has(mask, Permission.MANAGE_MESSAGES) || has(mask, Permission.MANAGE_CHANNELS)) return;
  const remaining = await claimSlowmodeSlot(tx, access.channel.id, userId, seconds);
  if (remaining !== undefined) throw tooManyRequests(remaining, 'Slowmode is on in this channel; wait before posting again');
}

/** A page, newest first. The read lock makes it wait for posts in flight, so its cursors never skip one. */
export async function listMessages(d: Domain, ctx: Ctx, channelId: string, query: ChannelMessagesQuery): Promise<ChannelMessage[]> {
  await historyAccess(d.pool, channelId, ctx.userId, d.channelLists);
  const page = await withTx(d.pool, async (tx) => {
    await lockChannelForRead(tx, channelId);
    return pageOfMessages(tx, channelId, query);
  });
  return withReactions(d.pool, page, ctx.userId);
}

export async function editMessage(d: Domain, ctx: Ctx, channelId: string, messageId: string, content: string): Promise<ChannelMessage> {
  const access = await textChannelAccess(d.pool, channelId, ctx.userId);
  const updated = await withTx(d.pool, async (tx) => {
    const current = await findMessage(tx, channelId, messageId, { lock: true });
    if (!current) throw notFound('Message');
    if (current.authorId !== ctx.userId) throw forbidden('You can only edit your own messages');
    assertHasBody(content, current.attachments);
    const mentions: MessageMentions = await resolveMentions(
      tx,
      access.channel.serverId,
      parseMentions(content),
      has(access.channelPermissions, Permission.MENTION_EVERYONE),
    );
    const message = await updateContent(tx, messageId, content, mentions);
    await emitMessageEvent(tx, ctx, 'guilds.message.updated', message);
    return message;
  });
  const [withTheirReactions] = await withReactions(d.pool, [updated], ctx.userId);
  return withTheirReactions as ChannelMessage;
}

export async function deleteMessage(d: Domain, ctx: Ctx, channelId: string, messageId: string): Promise<void> {
  const access = await textChannelAccess(d.pool, channelId, ctx.userId);
  await withTx(d.pool, async (tx) => {
    const message = await findMessage(tx, channelId, messageId, { lock: true });
    if (!message) throw notFound('Message');
    if (message.authorId !== ctx.userId) requirePermission(access.channelPermissions, Permission.MANAGE_MESSAGES, 'MANAGE_MESSAGES');
    await deleteMessageRow(tx, messageId);
    await emitMessageEvent(tx, ctx, 'guilds.message.deleted', { id: messageId, channelId, serverId: message.serverId });
  });
}
