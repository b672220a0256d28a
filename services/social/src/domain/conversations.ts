import { type Conversation, type ConversationCreatedEvent, SOCIAL_SUBJECTS } from '@chat/contracts';
import {
  type Bus,
  badRequest,
  enqueueEvent,
  forbidden,
  type KeyPage,
  notFound,
  type Pool,
  type Queryable,
  type RequestContext,
  seenStatuses,
  withTx,
} from '@chat/kit';
import { withReactions } from '@chat/messaging';
import { v7 as uuidv7 } from 'uuid';
import { liveCallsOf } from '../db/calls.ts';
import {
  type ConversationAccess,
  type ConversationView,
  conversationForParticipant,
  conversationsOf,
  insertGroupConversation,
  insertPairConversation,
} from '../db/conversations.ts';
import { messagesByIds } from '../db/messages.ts';
import { dmReactions } from '../db/reactions.ts';
import { relationBetween } from '../db/relationships.ts';
import { knownOrLearntUserIds } from './users.ts';

/** Conversations: who may open them, who may see them, who may write in them. */

type Deps = { pool: Pool; bus: Bus };

/**
 * The conversation `id` of a participant, or 404 (naming `what` was asked for) for everyone else:
 * a conversation one is not in, and its messages, are not visible, so they answer like unknown ones.
 */
export async function participantAccess(
  db: Queryable,
  ctx: RequestContext,
  id: string,
  options: { lock?: boolean; what?: string } = {},
): Promise<ConversationAccess> {
  const access = await conversationForParticipant(db, id, ctx.userId, { lock: options.lock });
  if (!access) throw notFound(options.what ?? 'Conversation');
  return access;
}

export const BLOCKED_MESSAGE = 'You cannot message this user: one of you has blocked the other';

/** The one writing rule: two people who blocked one another cannot write to each other. */
export function assertMayWrite(access: ConversationAccess): void {
  if (access.blocked) throw forbidden(BLOCKED_MESSAGE);
}

/**
 * Opens a conversation with `userIds` (the caller is added). One other user: the pair's single
 * 1:1 conversation, created on first use. More: a new group of up to ten people.
 */
export async function openConversation(
  deps: Deps,
  ctx: RequestContext,
  userIds: string[],
): Promise<{ conversation: Conversation; created: boolean }> {
  const others = [...new Set(userIds)].filter((id) => id !== ctx.userId);
  if (others.length === 0) throw badRequest('body.userIds: name at least one user other than yourself');
  const known = await knownOrLearntUserIds(deps, ctx, others);
  if (others.some((id) => !known.has(id))) throw notFound('User');
  for (const other of others) {
    const relation = await relationBetween(deps.pool, ctx.userId, other);
    if (relation.iBlocked) throw forbidden('You have blocked this user');
    // Issue 16: someone who blocked the caller answers like an unknown user, as friend requests do.
    if (relation.blockedMe) throw notFound('User');
  }
  const { id, created, view } = await withTx(deps.pool, async (tx) => {
    const opened = others.length === 1 ? await openPair(tx, others[0]!, ctx) : await openGroup(tx, others, ctx);
    const view = opened.created ? await announceConversation(tx, ctx, opened.id, [ctx.userId, ...others]) : undefined;
    return { ...opened, view };
  });
  // A new conversation was read for its event already; an existing pair is read now.
  const conversation = view ? (await present(deps, ctx, [view]))[0]! : await conversationOf(deps, ctx, id);
  return { conversation, created };
}

/**
 * A new conversation, as its participants' lists show it (the socket sends it to each with the
 * others' status as they may see it): nobody has written in it yet, and no call is in it. Answers
 * the conversation as read, for the caller's answer.
 */
async function announceConversation(tx: Queryable, ctx: RequestContext, id: string, participantIds: string[]): Promise<ConversationView> {
  const [view] = (await conversationsOf(tx, ctx.userId, { onlyId: id })) as [ConversationView];
  const { lastMessageId: _none, ...shown } = view;
  const participants = shown.participants.map(({ status: _status, ...user }) => user);
  const data: ConversationCreatedEvent = {
    conversationId: id,
    type: shown.type,
    participantIds,
    conversation: { ...shown, participants, lastMessage: null, call: null },
  };
  await enqueueEvent(tx, SOCIAL_SUBJECTS.conversationCreated, data, ctx.requestId);
  return view;
}

function openPair(tx: Queryable, other: string, ctx: RequestContext) {
  return insertPairConversation(tx, uuidv7(), ctx.userId, other);
}

async function openGroup(tx: Queryable, others: string[], ctx: RequestContext) {
  const id = uuidv7();
  await insertGroupConversation(tx, id, ctx.userId, [ctx.userId, ...others]);
  return { id, created: true };
}

export async function conversationOf(deps: Deps, ctx: RequestContext, id: string): Promise<Conversation> {
  const [view] = await conversationsOf(deps.pool, ctx.userId, { onlyId: id });
  if (!view) throw notFound('Conversation');
  const [conversation] = await present(deps, ctx, [view]);
  return conversation!;
}

/** One page of the caller's conversations by id, each with its last message. */
export async function listConversations(deps: Deps, ctx: RequestContext, page: KeyPage): Promise<Conversation[]> {
  return present(deps, ctx, await conversationsOf(deps.pool, ctx.userId, page));
}

/** Each conversation with its last message and its live call, as the caller sees them. */
async function present(deps: Deps, ctx: RequestContext, views: ConversationView[]): Promise<Conversation[]> {
  const lastIds = views.flatMap((v) => (v.lastMessageId ? [v.lastMessageId] : []));
  const messages = await withReactions(deps.pool, dmReactions, await messagesByIds(deps.pool, lastIds), ctx.userId);
  const byId = new Map(messages.map((m) => [m.id, m]));
  const calls = new Map(
    (
      await liveCallsOf(
        deps.pool,
        views.map((v) => v.id),
      )
    ).map((c) => [c.conversationId, c]),
  );
  // Participants show what the caller may see of them (a 1:1 conversation or a group may hold
  // strangers: the gateway answers offline for them): one question for every participant of the page.
  const seen = await seenStatuses(
    deps.bus,
    views.flatMap((v) => v.participants.map((p) => p.id)),
    ctx.requestId,
    { viewerId: ctx.userId },
  );
  return views.map(({ lastMessageId, ...view }) => ({
    ...view,
    participants: view.participants.map((p) => ({ ...p, status: seen(p.id) })),
    lastMessage: (lastMessageId && byId.get(lastMessageId)) || null,
    call: calls.get(view.id) ?? null,
  }));
}
