import {
  AckableRpc,
  MAX_VISIBILITY_QUESTION,
  type MessageEventData,
  READ_STATE_SUBJECTS,
  type ReadState,
  type ReadStateKind,
  VisibleChannelsRpc,
} from '@chat/contracts';
import { type Bus, enqueueEvent, notFound, type Pool, type Queryable, type RequestContext, requestRpc, withTx } from '@chat/kit';
import type { z } from 'zod';
import {
  advanceChannelHeads,
  advanceReadMark,
  advanceReadMarks,
  channelReadStates,
  conversationReadStates,
  isParticipant,
  isReadableMark,
} from '../db/read-states.ts';

/**
 * Read states: how far each user has read each channel and conversation. Channel facts come from
 * guilds' events; whether the user may still view a channel is asked of guilds once per request
 * (rpc.guilds.channels.visible), never copied here.
 */

export interface ReadStateDeps {
  pool: Pool;
  bus: Bus;
}

/** Which of these channels the user may view now: one question per 1,000 channels. */
export async function viewable(deps: ReadStateDeps, ctx: RequestContext, channelIds: string[]): Promise<Set<string>> {
  const visible = new Set<string>();
  for (let i = 0; i < channelIds.length; i += MAX_VISIBILITY_QUESTION) {
    const question = { userId: ctx.userId, channelIds: channelIds.slice(i, i + MAX_VISIBILITY_QUESTION) };
    const reply = await requestRpc(deps.bus, VisibleChannelsRpc, question, { requestId: ctx.requestId });
    for (const id of reply.channelIds) visible.add(id);
  }
  return visible;
}

/** Every conversation of the user, and each channel with a read state the user may still view. */
export async function listReadStates(deps: ReadStateDeps, ctx: RequestContext): Promise<ReadState[]> {
  const [channels, conversations] = await Promise.all([
    channelReadStates(deps.pool, ctx.userId),
    conversationReadStates(deps.pool, ctx.userId),
  ]);
  const visible =
    channels.length > 0
      ? await viewable(
          deps,
          ctx,
          channels.map((c) => c.id),
        )
      : new Set<string>();
  return [...channels.filter((c) => visible.has(c.id)), ...conversations];
}

/**
 * Acks a channel the user may view (404 "Channel not found" otherwise, as guilds would answer) at
 * one of its messages (404 "Message not found" for any other id: another channel's would mark read
 * every older message of this one, and a voice channel holds none). Social keeps no record of
 * which channel a message is in, so guilds answers both in one question (rpc.guilds.channel.ackable).
 */
export async function ackChannel(deps: ReadStateDeps, ctx: RequestContext, channelId: string, messageId: string): Promise<ReadState> {
  const question = { userId: ctx.userId, channelId, messageId };
  const { viewable, holdsMessage } = await requestRpc(deps.bus, AckableRpc, question, { requestId: ctx.requestId });
  if (!viewable) throw notFound('Channel');
  if (!holdsMessage) throw notFound('Message');
  return ack(deps, ctx, 'channel', channelId, messageId);
}

/** Acks one of the user's conversations (404 for anyone else's). */
export async function ackConversation(
  deps: ReadStateDeps,
  ctx: RequestContext,
  conversationId: string,
  messageId: string,
): Promise<ReadState> {
  if (!(await isParticipant(deps.pool, ctx.userId, conversationId))) throw notFound('Conversation');
  if (!(await isReadableMark(deps.pool, conversationId, messageId))) throw notFound('Message');
  return ack(deps, ctx, 'conversation', conversationId, messageId);
}

/**
 * Moves the read mark forwards and answers the read state. Only a move is announced (READ_STATE_UPDATE
 * to the user's sessions): an older id changes nothing and tells nobody.
 */
async function ack(deps: ReadStateDeps, ctx: RequestContext, kind: ReadStateKind, targetId: string, messageId: string): Promise<ReadState> {
  return withTx(deps.pool, async (tx) => {
    const moved = await advanceReadMark(tx, ctx.userId, targetId, kind, messageId);
    const [state] =
      kind === 'channel' ? await channelReadStates(tx, ctx.userId, targetId) : await conversationReadStates(tx, ctx.userId, targetId);
    const readState = state as ReadState;
    if (moved) await enqueueEvent(tx, READ_STATE_SUBJECTS.readStateUpdated, { userId: ctx.userId, readState }, ctx.requestId);
    return readState;
  });
}

/**
 * Posted channel messages: each channel's newest id moves, and each author has read up to their
 * message (as on Discord); a webhook reads nothing. Three statements however many messages.
 */
export async function channelMessagesPosted(tx: Queryable, messages: z.output<typeof MessageEventData>[]): Promise<void> {
  await advanceChannelHeads(
    tx,
    messages.map((m) => ({ channelId: m.channelId, serverId: m.serverId, messageId: m.id })),
  );
  await advanceReadMarks(
    tx,
    messages
      .filter((m) => m.webhookId === null)
      .map((m) => ({ userId: m.authorId, targetId: m.channelId, kind: 'channel', messageId: m.id })),
  );
}

/** The senders of direct messages have read their conversations up to them. */
export async function directMessagesSent(
  tx: Queryable,
  messages: { id: string; conversationId: string; senderId: string }[],
): Promise<void> {
  await advanceReadMarks(
    tx,
    messages.map((m) => ({ userId: m.senderId, targetId: m.conversationId, kind: 'conversation', messageId: m.id })),
  );
}
