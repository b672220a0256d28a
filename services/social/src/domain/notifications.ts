import {
  type CallEvent,
  type DmDeletedEvent,
  type DmMessageEvent,
  type FriendAcceptedEvent,
  type FriendRequestedEvent,
  type JoinRequest,
  type MessageMentionedEvent,
  type NotificationFeed,
  type NotificationSettings,
  type NotificationsQuery,
  type PutNotificationSettingsBody,
  READ_STATE_SUBJECTS,
} from '@chat/contracts';
import { enqueueEvent, type Pool, type Queryable, type RequestContext, withTx } from '@chat/kit';
import { excerptOf } from '@chat/messaging';
import { v7 as uuidv7 } from 'uuid';
import type { z } from 'zod';
import { messageById } from '../db/messages.ts';
import {
  advanceFeedMark,
  feedPage,
  feedUnread,
  findSettings,
  forgetNotificationsOf,
  insertNotification,
  type NewNotification,
  saveSettings,
  usersCounting,
} from '../db/notifications.ts';
import { recordMentions } from '../db/read-states.ts';

/**
 * The notification feed, built from events only (guilds' resolved mentions and join-request
 * decisions, social's own friend, message and call events), each applied once in its consumer's
 * transaction. Every entry is announced as `social.notification.created` (NOTIFICATION_CREATE).
 */

type Entry = Omit<
  NewNotification,
  'id' | 'via' | 'actorId' | 'serverId' | 'channelId' | 'conversationId' | 'messageId' | 'callId' | 'excerpt'
> &
  Partial<NewNotification>;

/** Adds one entry to these users' feeds and announces it; the same id for all of them. */
async function notify(tx: Queryable, userIds: string[], entry: Entry): Promise<void> {
  if (userIds.length === 0) return;
  const notification: NewNotification = {
    id: uuidv7(),
    via: null,
    actorId: null,
    serverId: null,
    channelId: null,
    conversationId: null,
    messageId: null,
    callId: null,
    excerpt: null,
    ...entry,
  };
  await insertNotification(tx, userIds, notification);
  await enqueueEvent(tx, READ_STATE_SUBJECTS.notificationCreated, { notification: { ...notification, read: false }, userIds });
}

// ---- Requests ----

export async function getFeed(pool: Pool, ctx: RequestContext, query: NotificationsQuery): Promise<NotificationFeed> {
  const [notifications, unread] = await Promise.all([feedPage(pool, ctx.userId, query), feedUnread(pool, ctx.userId)]);
  return { ...unread, notifications };
}

export async function ackFeed(pool: Pool, ctx: RequestContext, until: string) {
  await withTx(pool, (tx) => advanceFeedMark(tx, ctx.userId, until));
  return feedUnread(pool, ctx.userId);
}

export async function getSettings(pool: Pool, ctx: RequestContext, serverId: string): Promise<NotificationSettings> {
  return (await findSettings(pool, ctx.userId, serverId)) ?? { serverId, level: 'all', muteUntil: null, channels: {} };
}

export async function putSettings(
  pool: Pool,
  ctx: RequestContext,
  serverId: string,
  body: PutNotificationSettingsBody,
): Promise<NotificationSettings> {
  const settings: NotificationSettings = { serverId, level: body.level, muteUntil: body.muteUntil ?? null, channels: body.channels ?? {} };
  await saveSettings(pool, ctx.userId, settings);
  return (await findSettings(pool, ctx.userId, serverId)) as NotificationSettings;
}

// ---- Events ----

/**
 * A batch of users a channel message mentions (resolved by guilds). The users' settings decide
 * whether it counts; those it counts for get the mention (until they ack past it) and a feed entry.
 */
export async function messageMentioned(tx: Queryable, m: MessageMentionedEvent): Promise<void> {
  const direct = m.via === 'user' || m.via === 'reply';
  const counting = await usersCounting(tx, { ...m, direct, at: m.createdAt });
  const counted = await recordMentions(tx, counting, m.channelId, m.messageId);
  await notify(tx, counted, {
    kind: m.via === 'reply' ? 'reply' : 'mention',
    via: m.via === 'reply' ? null : m.via,
    actorId: m.authorId,
    serverId: m.serverId,
    channelId: m.channelId,
    messageId: m.messageId,
    excerpt: m.excerpt,
    createdAt: m.createdAt,
  });
}

/** A direct message that answers someone else's tells its author (the sender's read mark moves in directMessagesSent). */
export async function directMessageReplied(tx: Queryable, event: z.output<typeof DmMessageEvent>): Promise<void> {
  const { message, participantIds } = event;
  if (!message.replyToId) return;
  const original = await messageById(tx, message.replyToId);
  if (!original || original.senderId === message.senderId || !participantIds.includes(original.senderId)) return;
  await notify(tx, [original.senderId], {
    kind: 'dm_reply',
    actorId: message.senderId,
    conversationId: message.conversationId,
    messageId: message.id,
    excerpt: excerptOf(message.content),
    createdAt: message.createdAt,
  });
}

export async function directMessageDeleted(tx: Queryable, event: z.output<typeof DmDeletedEvent>): Promise<void> {
  await forgetNotificationsOf(tx, event.id);
}

export function friendRequested(tx: Queryable, event: z.output<typeof FriendRequestedEvent>): Promise<void> {
  return notify(tx, [event.recipientId], { kind: 'friend_request', actorId: event.requesterId, createdAt: event.createdAt });
}

/** The one who asked learns that the other accepted. */
export function friendAccepted(tx: Queryable, event: z.output<typeof FriendAcceptedEvent>, at: string): Promise<void> {
  return notify(tx, [event.requesterId], { kind: 'friend_accept', actorId: event.recipientId, createdAt: at });
}

export async function joinRequestReviewed(tx: Queryable, request: JoinRequest, at: string): Promise<void> {
  if (request.status === 'pending') return;
  await notify(tx, [request.userId], {
    kind: request.status === 'approved' ? 'join_request_approved' : 'join_request_rejected',
    actorId: request.reviewedBy,
    serverId: request.serverId,
    createdAt: request.reviewedAt ?? at,
  });
}

/** Whoever was still being rung when a call ended missed it (the caller aside). */
export async function callEnded(tx: Queryable, event: CallEvent): Promise<void> {
  const { call } = event;
  const missed = call.participants.filter((p) => p.state === 'ringing' && p.userId !== call.initiatorId).map((p) => p.userId);
  await notify(tx, missed, {
    kind: 'missed_call',
    actorId: call.initiatorId,
    conversationId: call.conversationId,
    callId: call.id,
    createdAt: call.endedAt ?? call.createdAt,
  });
}
