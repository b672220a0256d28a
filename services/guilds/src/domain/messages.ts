import {
  type ChannelMessage,
  type ChannelMessagesQuery,
  type MESSAGES_EVENTS,
  type MessageMentions,
  Permission,
  type SendMessageBody,
} from '@chat/contracts';
import {
  AppError,
  badRequest,
  enqueueEvent,
  forbidden,
  markEventsWritten,
  notFound,
  outboxRow,
  type Queryable,
  tooManyRequests,
  withRetryingTx,
  withSavepointInRequestTx,
} from '@chat/kit';
import {
  assertEditable,
  assertHasBody,
  previewsOfLinksIn,
  resolveAttachments,
  withNonce,
  withReactions as withViewerReactions,
  writtenMessageType,
} from '@chat/messaging';
import { v7 as uuidv7 } from 'uuid';
import type { z } from 'zod';
import {
  deleteMessageRow,
  findMessage,
  type NewMessage,
  type PostChecks,
  type PostOutcome,
  pageOfMessages,
  postMessageRow,
  type StoredMessage,
  updateContent,
} from '../db/messages.ts';
import { messageReactions } from '../db/reactions.ts';
import { type ChannelAccess, channelAccess, requirePermission } from './access.ts';
import type { ChannelLists } from './channel-list.ts';
import type { Ctx, Domain } from './context.ts';
import { parseMentions, resolveMentions } from './mentions.ts';
import { has } from './permissions.ts';
import { AccessSnapshots, postingSnapshot } from './post-access.ts';

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

type MessageToPost = Omit<NewMessage, 'id' | 'type' | 'createdAt'> & { type?: NewMessage['type'] };

/**
 * Writes a message and its event (with the client's nonce, when given) in one statement, after the
 * checks `checks` names: the one way a message is created. Answers why when a check refuses it.
 */
async function writeMessage(
  db: Queryable,
  ctx: Pick<Ctx, 'requestId'>,
  message: MessageToPost,
  nonce: string | undefined,
  checks: PostChecks,
): Promise<StoredMessage | Exclude<PostOutcome, { outcome: 'posted' }>> {
  // A system message names its type; what a person writes is a reply or a default message.
  const row: NewMessage = {
    ...message,
    id: uuidv7(),
    type: message.type ?? writtenMessageType(message.replyToId),
    createdAt: new Date().toISOString(),
  };
  const draft: StoredMessage = {
    id: row.id,
    channelId: row.channelId,
    serverId: row.serverId,
    authorId: row.authorId,
    // Filled in by the statement, from the users read-model (or the webhook's own).
    authorName: row.webhook?.name ?? UNKNOWN_AUTHOR,
    authorAvatar: row.webhook?.avatarUrl ?? null,
    content: row.content,
    attachments: row.attachments,
    replyToId: row.replyToId,
    mentions: row.mentions,
    pinned: false,
    editedAt: null,
    createdAt: row.createdAt,
    webhookId: row.webhook?.id ?? null,
    type: row.type,
    embeds: [],
  };
  const event = outboxRow('guilds.message.created', withNonce(draft, nonce), ctx.requestId);
  const outcome = await postMessageRow(db, row, event, checks);
  if (outcome.outcome !== 'posted') return outcome;
  markEventsWritten(db);
  const stored = { ...draft, id: outcome.id, authorName: outcome.authorName ?? UNKNOWN_AUTHOR, authorAvatar: outcome.authorAvatar };
  return withNonce(stored, nonce);
}

// As toMessage in db/messages.ts: an author whose auth event has not reached us yet.
const UNKNOWN_AUTHOR = 'Unknown user';

/** Posts a message that passed its checks already (system messages, webhooks), in the caller's transaction. */
export async function postMessage(
  tx: Queryable,
  ctx: Pick<Ctx, 'requestId'>,
  message: MessageToPost,
  nonce?: string,
): Promise<StoredMessage> {
  const written = await writeMessage(tx, ctx, message, nonce, { accessVersion: null, slowmodeSeconds: 0 });
  if ('outcome' in written) throw refusal(written);
  return written;
}

function refusal(outcome: Exclude<PostOutcome, { outcome: 'posted' }>): Error {
  if (outcome.outcome === 'no_reply') return badRequest('body.replyToId: no such message in this channel');
  if (outcome.outcome === 'slowmode')
    return tooManyRequests(outcome.retryAfter, 'Slowmode is on in this channel; wait before posting again');
  // The server's permissions kept changing under the post: nothing was written, a retry will do.
  return new AppError(503, 'Permissions changed while posting; try again');
}

// A refused version means the snapshot was stale: post again with one read now, at most this often.
const POST_ATTEMPTS = 3;

/**
 * A member's post: authorised by the member's access snapshot (no permission rows read when it is
 * cached), then one statement that checks the snapshot's version, the reply, slowmode, and writes
 * the message with its event. No transaction of the service's own: the statement is one.
 */
export async function sendMessage(d: Domain, ctx: Ctx, channelId: string, body: SendMessageBody): Promise<ChannelMessage> {
  const withFiles = Boolean(body.attachments && Object.keys(body.attachments).length > 0);
  const snapshots = d.accessSnapshots ?? new AccessSnapshots();
  const target = { channelId, userId: ctx.userId, withFiles, withReply: Boolean(body.replyToId) };
  let snapshot = await postingSnapshot(d.pool, snapshots, target);
  // Before the statement: no connection is held while the media service answers.
  const attachments = await resolveAttachments(d.bus, ctx, body.attachments);
  assertHasBody(body.content, attachments);
  const parsed = parseMentions(body.content);
  for (let attempt = 1; ; attempt++) {
    const { access, version } = snapshot;
    const mask = access.channelPermissions;
    const mentions = await resolveMentions(d.pool, access.channel.serverId, parsed, has(mask, Permission.MENTION_EVERYONE));
    const message = {
      channelId,
      serverId: access.channel.serverId,
      authorId: ctx.userId,
      content: body.content,
      attachments,
      replyToId: body.replyToId ?? null,
      mentions,
    };
    const checks = { accessVersion: version, slowmodeSeconds: slowmodeOf(access) };
    // Under an Idempotency-Key the post runs in the key's transaction: a savepoint keeps it usable for the retry.
    const written = await withSavepointInRequestTx(d.pool, (db) => writeMessage(db, ctx, message, body.nonce, checks)).catch(
      staleWhenParentGone,
    );
    if (!('outcome' in written)) return { ...written, reactions: {} };
    if (written.outcome !== 'stale' || attempt === POST_ATTEMPTS) throw refusal(written);
    snapshot = await postingSnapshot(d.pool, snapshots, { ...target, fresh: true });
  }
}

/**
 * The channel was deleted after the statement checked the snapshot's version and before the
 * insert's foreign key was checked: as stale as a refused version, and read again it is 404.
 */
function staleWhenParentGone(err: unknown): { outcome: 'stale' } {
  if ((err as { code?: string }).code === '23503') return { outcome: 'stale' };
  throw err;
}

/** Slowmode per member: the channel's slowmodeSeconds, unless the member moderates (0: no window). */
function slowmodeOf(access: ChannelAccess): number {
  const mask = access.channelPermissions;
  if (has(mask, Permission.MANAGE_MESSAGES) || has(mask, Permission.MANAGE_CHANNELS)) return 0;
  return Math.max(0, access.channel.slowmodeSeconds);
}

/** A page, newest first. */
export async function listMessages(d: Domain, ctx: Ctx, channelId: string, query: ChannelMessagesQuery): Promise<ChannelMessage[]> {
  await historyAccess(d.pool, channelId, ctx.userId, d.channelLists);
  return withReactions(d.pool, await pageOfMessages(d.pool, channelId, query), ctx.userId);
}

export async function editMessage(d: Domain, ctx: Ctx, channelId: string, messageId: string, content: string): Promise<ChannelMessage> {
  const access = await textChannelAccess(d.pool, channelId, ctx.userId);
  const updated = await withRetryingTx(d.pool, async (tx) => {
    const current = await findMessage(tx, channelId, messageId, { lock: 'update' });
    if (!current) throw notFound('Message');
    // Its author is who joined or pinned: without this, they could rewrite what the platform said.
    assertEditable(current.type);
    if (current.authorId !== ctx.userId) throw forbidden('You can only edit your own messages');
    assertHasBody(content, current.attachments);
    const mentions: MessageMentions = await resolveMentions(
      tx,
      access.channel.serverId,
      parseMentions(content),
      has(access.channelPermissions, Permission.MENTION_EVERYONE),
    );
    // A link no longer in the text loses its preview (a bank's preview must not stay on a phishing link).
    const embeds = previewsOfLinksIn(content, current.embeds);
    const message = await updateContent(tx, messageId, { content, mentions, embeds });
    await emitMessageEvent(tx, ctx, 'guilds.message.updated', message);
    return message;
  });
  const [withTheirReactions] = await withReactions(d.pool, [updated], ctx.userId);
  return withTheirReactions as ChannelMessage;
}

export async function deleteMessage(d: Domain, ctx: Ctx, channelId: string, messageId: string): Promise<void> {
  const access = await textChannelAccess(d.pool, channelId, ctx.userId);
  await withRetryingTx(d.pool, async (tx) => {
    const message = await findMessage(tx, channelId, messageId, { lock: 'update' });
    if (!message) throw notFound('Message');
    if (message.authorId !== ctx.userId) requirePermission(access.channelPermissions, Permission.MANAGE_MESSAGES, 'MANAGE_MESSAGES');
    await deleteMessageRow(tx, messageId);
    await emitMessageEvent(tx, ctx, 'guilds.message.deleted', { id: messageId, channelId, serverId: message.serverId });
  });
}
