import {
  type ChannelMessage,
  type ChannelMessagesQuery,
  MEDIA_RPC,
  type MESSAGES_EVENTS,
  MediaFileReply,
  type MessageMentions,
  mediaIdFromUrl,
  Permission,
  type SendMessageBody,
} from '@chat/contracts';
import {
  AppError,
  type Bus,
  badRequest,
  enqueueEvent,
  forbidden,
  notFound,
  type Queryable,
  requestRpc,
  tooManyRequests,
  withTx,
} from '@chat/kit';
import { v7 as uuidv7 } from 'uuid';
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
  type StoredFile,
  type StoredMessage,
  updateContent,
} from '../db/messages.ts';
import { reactionsOf } from '../db/reactions.ts';
import { type ChannelAccess, channelAccess, requirePermission } from './access.ts';
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
export async function textChannelAccess(db: Queryable, channelId: string, userId: string): Promise<ChannelAccess> {
  const access = await channelAccess(db, channelId, userId);
  if (access.channel.channelType !== 'text') throw badRequest('Messages belong in text channels');
  return access;
}

/** Access for reading a channel's history: VIEW_CHANNEL (else 404) and READ_MESSAGE_HISTORY (else 403). */
export async function historyAccess(db: Queryable, channelId: string, userId: string): Promise<ChannelAccess> {
  const access = await textChannelAccess(db, channelId, userId);
  requirePermission(access.channelPermissions, Permission.READ_MESSAGE_HISTORY, 'READ_MESSAGE_HISTORY');
  return access;
}

/** Adds each message's reactions as `viewerId` sees them. */
export async function withReactions(db: Queryable, messages: StoredMessage[], viewerId: string | null): Promise<ChannelMessage[]> {
  const reactions =
    viewerId === null
      ? new Map()
      : await reactionsOf(
          db,
          messages.map((m) => m.id),
          viewerId,
        );
  return messages.map((m) => ({ ...m, reactions: reactions.get(m.id) ?? {} }));
}

/** A message needs words or files: content may be blank only when it carries attachments. */
function assertHasBody(content: string, attachments: Record<string, StoredFile>): void {
  if (content.trim() === '' && Object.keys(attachments).length === 0) {
    throw badRequest('body.content: must be 1-4000 characters unless attachments are given');
  }
}

/**
 * The id of a channel's next message: a fresh UUID v7, or one a millisecond past the newest when
 * this process's clock is behind the one that issued it (another replica), so ids keep growing.
 */
export function nextMessageId(latestId: string | null, fresh: string = uuidv7()): string {
  if (latestId === null || fresh > latestId) return fresh;
  const latestMs = Number.parseInt(latestId.slice(0, 8) + latestId.slice(9, 13), 16);
  return uuidv7({ msecs: latestMs + 1 });
}

/** Inserts a message under the channel's write lock and records its event: the one way a message is created. */
export async function postMessage(tx: Queryable, ctx: Pick<Ctx, 'requestId'>, message: Omit<NewMessage, 'id'>): Promise<StoredMessage> {
  await lockChannelForWrite(tx, message.channelId);
  const id = nextMessageId(await latestMessageId(tx, message.channelId));
  const stored = await insertMessage(tx, { ...message, id });
  await emitMessageEvent(tx, ctx, 'guilds.message.created', stored);
  return stored;
}

export async function sendMessage(d: Domain, ctx: Ctx, channelId: string, body: SendMessageBody): Promise<ChannelMessage> {
  const access = await textChannelAccess(d.pool, channelId, ctx.userId);
  const mask = access.channelPermissions;
  requirePermission(mask, Permission.SEND_MESSAGES, 'SEND_MESSAGES');
  if (body.attachments && Object.keys(body.attachments).length > 0) requirePermission(mask, Permission.ATTACH_FILES, 'ATTACH_FILES');
  // Before the transaction: no connection is held while the media service answers.
  const attachments = await verifyAttachments(d.bus, ctx, body.attachments);
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
    return postMessage(tx, ctx, {
      channelId,
      serverId: access.channel.serverId,
      authorId: ctx.userId,
      content: body.content,
      attachments,
      replyToId: body.replyToId ?? null,
      mentions,
    });
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

/**
 * Replaces each attachment the client sent with the media service's own record of that file, so
 * that url, type and size are never the client's word. Only the caller's own uploads are accepted;
 * an unknown file and someone else's answer the same 400. Media down: 503 (timeout: 504).
 */
async function verifyAttachments(bus: Bus, ctx: Ctx, attachments: SendMessageBody['attachments']): Promise<Record<string, StoredFile>> {
  const entries = Object.entries(attachments ?? {});
  const verified = await Promise.all(entries.map(async ([key, file]) => [key, await mediaRecord(bus, ctx, key, file.url)] as const));
  return Object.fromEntries(verified);
}

async function mediaRecord(bus: Bus, ctx: Ctx, key: string, url: string): Promise<StoredFile> {
  const id = mediaIdFromUrl(url);
  if (!id) throw badRequest(`body.attachments.${key}: not a file of the media service`);
  let file: MediaFileReply;
  try {
    file = MediaFileReply.parse(await requestRpc(bus, MEDIA_RPC.fileGet, { id }, { requestId: ctx.requestId }));
  } catch (err) {
    if (err instanceof AppError && err.status === 404) throw badRequest(`body.attachments.${key}: unknown file`);
    throw err;
  }
  if (file.uploaderId !== ctx.userId) throw badRequest(`body.attachments.${key}: unknown file`);
  return { url: file.url, filename: file.filename, contentType: file.contentType, size: file.size };
}

/** A page, newest first. The read lock makes it wait for posts in flight, so its cursors never skip one. */
export async function listMessages(d: Domain, ctx: Ctx, channelId: string, query: ChannelMessagesQuery): Promise<ChannelMessage[]> {
  await historyAccess(d.pool, channelId, ctx.userId);
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
