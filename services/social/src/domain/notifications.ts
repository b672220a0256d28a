import {
  type CallEvent,
  type DmDeletedEvent,
  type DmMessageEvent,
  type FriendAcceptedEvent,
  type FriendRequestedEvent,
  type JoinRequest,
  MAX_VISIBILITY_QUESTION,
  MemberCheckRpc,
  type MemberLeftEventData,
  type MessageEventData,
  type MessageMentionedEvent,
  type Notification,
  type NotificationFeed,
  type NotificationSettings,
  type NotificationsQuery,
  type PutNotificationSettingsBody,
  READ_STATE_SUBJECTS,
  type ServerDeletedEventData,
} from '@chat/contracts';
import { enqueueEvent, notFound, type Queryable, type RequestContext, requestRpc, withTx } from '@chat/kit';
import { excerptOf } from '@chat/messaging';
import { v7 as uuidv7 } from 'uuid';
import type { z } from 'zod';
import { messageById } from '../db/messages.ts';
import {
  advanceFeedMark,
  feedPage,
  feedReaches,
  feedUnread,
  findSettings,
  forgetConversationNotifications,
  forgetFriendRequestNotifications,
  forgetMemberSettings,
  forgetNotificationsOf,
  forgetServerChannelNotifications,
  forgetServerSettings,
  insertNotification,
  type NewNotification,
  saveSettings,
  setExcerptOf,
  usersCounting,
} from '../db/notifications.ts';
import { forgetServerMentions, recordMentions } from '../db/read-states.ts';
import { relationBetween } from '../db/relationships.ts';
import { displayNames } from '../db/users.ts';
import { type ReadStateDeps, viewable } from './read-states.ts';

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

/**
 * The most entries one further read of the feed takes. Reads past entries of hidden channels grow
 * from `limit` by doubling up to this, so a long run of them costs few round trips, and the
 * channels of one read always fit one visibility question.
 */
const MAX_FEED_BATCH = MAX_VISIBILITY_QUESTION;

/** Which channels the user may view, asked of guilds once per channel per request (rpc.guilds.channels.visible). */
type Views = { visible: Set<string>; hidden: Set<string> };

async function learnViews(deps: ReadStateDeps, ctx: RequestContext, views: Views, channelIds: (string | null)[]): Promise<void> {
  const unknown = [...new Set(channelIds)].filter((id): id is string => id !== null && !views.visible.has(id) && !views.hidden.has(id));
  if (unknown.length === 0) return;
  const visible = await viewable(deps, ctx, unknown);
  for (const id of unknown) (visible.has(id) ? views.visible : views.hidden).add(id);
}

const shown = (views: Views, channelId: string | null) => channelId === null || views.visible.has(channelId);

/**
 * The feed as the user may see it now: entries of channels they can no longer view (guilds decides,
 * overrides and roles included) and of groups they left are neither shown nor counted.
 */
export async function getFeed(deps: ReadStateDeps, ctx: RequestContext, query: NotificationsQuery): Promise<NotificationFeed> {
  const views: Views = { visible: new Set(), hidden: new Set() };
  const [first, unread] = await Promise.all([
    feedPage(deps.pool, ctx.userId, { ...query, hiddenChannelIds: [] }),
    feedUnread(deps.pool, ctx.userId),
  ]);
  // One question for the page's channels and those of the unread entries.
  await learnViews(deps, ctx, views, [...first.map((n) => n.channelId), ...unread.unread.map((u) => u.channelId)]);
  const notifications = await fillPage(deps, ctx, query, views, first);
  return { ...countShown(unread, views), notifications };
}

/**
 * The page without entries of hidden channels, topped up by reading on past them until it is full
 * or the feed ends: a page shorter than `limit` means the end, never a count of reads run out. The
 * work stays bounded: each read starts below the last and skips in SQL the channels already known
 * hidden, so no entry is read twice, and a full read that leaves the page short has met a hidden
 * channel not met before; so a request makes at most one read (and one visibility question) more
 * than the hidden channels it meets, fewer as the reads grow.
 */
async function fillPage(
  deps: ReadStateDeps,
  ctx: RequestContext,
  query: NotificationsQuery,
  views: Views,
  first: Notification[],
): Promise<Notification[]> {
  const page = first.filter((n) => shown(views, n.channelId));
  let read = first;
  let batch = query.limit;
  while (page.length < query.limit && read.length === batch) {
    const before = (read.at(-1) as Notification).id;
    batch = Math.min(batch * 2, MAX_FEED_BATCH);
    read = await feedPage(deps.pool, ctx.userId, { before, limit: batch, hiddenChannelIds: [...views.hidden] });
    await learnViews(
      deps,
      ctx,
      views,
      read.map((n) => n.channelId),
    );
    page.push(...read.filter((n) => shown(views, n.channelId)));
  }
  return page.slice(0, query.limit);
}

type FeedUnread = Omit<NotificationFeed, 'notifications'>;

function countShown(feed: Awaited<ReturnType<typeof feedUnread>>, views: Views): FeedUnread {
  const unreadCount = feed.unread.filter((u) => shown(views, u.channelId)).reduce((sum, u) => sum + u.count, 0);
  return { unreadCount, lastReadId: feed.lastReadId };
}

/** Moves the feed's read mark; answers the unread count as the feed shows it. */
export async function ackFeed(deps: ReadStateDeps, ctx: RequestContext, until: string): Promise<FeedUnread> {
  if (!(await feedReaches(deps.pool, ctx.userId, until))) throw notFound('Notification');
  await withTx(deps.pool, (tx) => advanceFeedMark(tx, ctx.userId, until));
  const feed = await feedUnread(deps.pool, ctx.userId);
  const views: Views = { visible: new Set(), hidden: new Set() };
  await learnViews(
    deps,
    ctx,
    views,
    feed.unread.map((u) => u.channelId),
  );
  return countShown(feed, views);
}

/**
 * Settings are the caller's for a server they are in (asked of guilds: rpc.guilds.member.check): 404
 * for any other, unknown or deleted, as guilds answers it, so no row is kept for a server that
 * nothing would ever clean up.
 */
async function assertMember(deps: ReadStateDeps, ctx: RequestContext, serverId: string): Promise<void> {
  const { isMember } = await requestRpc(deps.bus, MemberCheckRpc, { serverId, userId: ctx.userId }, { requestId: ctx.requestId });
  if (!isMember) throw notFound('Server');
}

export async function getSettings(deps: ReadStateDeps, ctx: RequestContext, serverId: string): Promise<NotificationSettings> {
  await assertMember(deps, ctx, serverId);
  return (await findSettings(deps.pool, ctx.userId, serverId)) ?? { serverId, level: 'all', muteUntil: null, channels: {} };
}

export async function putSettings(
  deps: ReadStateDeps,
  ctx: RequestContext,
  serverId: string,
  body: PutNotificationSettingsBody,
): Promise<NotificationSettings> {
  await assertMember(deps, ctx, serverId);
  const settings: NotificationSettings = { serverId, level: body.level, muteUntil: body.muteUntil ?? null, channels: body.channels ?? {} };
  await saveSettings(deps.pool, ctx.userId, settings);
  return (await findSettings(deps.pool, ctx.userId, serverId)) as NotificationSettings;
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

/** An edited direct message: its reply entry shows the new text (nothing of what the edit removed). */
export async function directMessageEdited(tx: Queryable, event: z.output<typeof DmMessageEvent>): Promise<void> {
  await setExcerptOf(tx, event.message.id, excerptOf(event.message.content));
}

/**
 * An edited channel message: its entries show the new text, mentions named as guilds names them
 * (users by display name from the read-model; role names are guilds', so a role shows as `@role`).
 */
export async function channelMessageEdited(tx: Queryable, message: z.output<typeof MessageEventData>): Promise<void> {
  await setExcerptOf(tx, message.id, excerptOf(message.content, await displayNames(tx, message.mentions.users)));
}

/**
 * Who left a server (left, kicked, banned) keeps no entry of its channels from before: they cannot
 * view them now; nor its settings (Discord keeps nothing of a server left), unless a rejoin wrote them.
 */
export async function serverLeft(tx: Queryable, event: z.output<typeof MemberLeftEventData>, at: string): Promise<void> {
  await forgetServerChannelNotifications(tx, event.userId, event.serverId, at);
  await forgetServerMentions(tx, event.userId, event.serverId, at);
  await forgetMemberSettings(tx, event.userId, event.serverId, at);
}

/** A deleted server leaves no settings behind (its entries and mentions are hidden by guilds' answers). */
export async function serverDeleted(tx: Queryable, event: z.output<typeof ServerDeletedEventData>): Promise<void> {
  await forgetServerSettings(tx, event.id);
}

/** Who left a group keeps no entry of it (called in the leave's transaction). */
export function conversationLeft(tx: Queryable, userId: string, conversationId: string): Promise<void> {
  return forgetConversationNotifications(tx, userId, conversationId);
}

export async function directMessageDeleted(tx: Queryable, event: z.output<typeof DmDeletedEvent>): Promise<void> {
  await forgetNotificationsOf(tx, event.id);
}

/**
 * The recipient learns of a pending request: one entry per requester, however late the events of
 * earlier, cancelled requests are applied; none when the request is already gone.
 */
export async function friendRequested(tx: Queryable, event: z.output<typeof FriendRequestedEvent>): Promise<void> {
  if (!(await relationBetween(tx, event.requesterId, event.recipientId)).outgoing) return;
  await forgetFriendRequestNotifications(tx, event.requesterId, event.recipientId);
  await notify(tx, [event.recipientId], { kind: 'friend_request', actorId: event.requesterId, createdAt: event.createdAt });
}

/** The one who asked learns that the other accepted. */
export function friendAccepted(tx: Queryable, event: z.output<typeof FriendAcceptedEvent>, at: string): Promise<void> {
  return notify(tx, [event.requesterId], { kind: 'friend_accept', actorId: event.recipientId, createdAt: at });
}

/**
 * The requester learns of a moderator's decision; a request approved by nobody was settled by the
 * requester joining another way (an invite), which they know of already.
 */
export async function joinRequestReviewed(tx: Queryable, request: JoinRequest, at: string): Promise<void> {
  if (request.status === 'pending' || request.reviewedBy === null) return;
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
