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
  type MessageDeletedEventData,
  type MessageEventData,
  type MessageMentionedEvent,
  type Notification,
  type NotificationFeed,
  type NotificationSettings,
  type NotificationsAcked,
  type NotificationsQuery,
  type PutNotificationSettingsBody,
  READ_STATE_SUBJECTS,
  type Role,
  type RoleDeletedEventData,
  ServerChannelsAmongRpc,
  type ServerDeletedEventData,
} from '@chat/contracts';
import { badRequest, enqueueEvent, notFound, type Queryable, type RequestContext, requestRpc, withTx } from '@chat/kit';
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
  forgetUnmadeMentions,
  insertNotification,
  type NewNotification,
  type RemovedEntries,
  saveSettings,
  setExcerptOf,
  usersCounting,
} from '../db/notifications.ts';
import { forgetMentionsOf, forgetMentionsOfUsers, forgetServerMentions, recordMentions } from '../db/read-states.ts';
import { relationBetween } from '../db/relationships.ts';
import { forgetRoleName, roleNames, saveOwnersRoleNames, saveRoleName } from '../db/roles.ts';
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

/**
 * Adds one entry to these users' feeds and announces it; the same id for all of them. Those of
 * `alreadyRead` get it read (they had read past its message): listed, counted nowhere.
 */
async function notify(tx: Queryable, userIds: string[], entry: Entry, alreadyRead: string[] = []): Promise<void> {
  if (userIds.length === 0 && alreadyRead.length === 0) return;
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
  for (const [users, read] of [
    [userIds, false],
    [alreadyRead, true],
  ] as const) {
    if (users.length === 0) continue;
    await insertNotification(tx, users, notification, read);
    await enqueueEvent(tx, READ_STATE_SUBJECTS.notificationCreated, { notification: { ...notification, read }, userIds: users });
  }
}

/** Tells the users whose entries a change removed (NOTIFICATION_DELETE): one event for the change, none when it removed nothing. */
async function announceRemoved(tx: Queryable, removed: RemovedEntries, requestId?: string): Promise<void> {
  if (removed.ids.length === 0) return;
  await enqueueEvent(tx, READ_STATE_SUBJECTS.notificationsDeleted, removed, requestId);
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

function countShown(feed: Awaited<ReturnType<typeof feedUnread>>, views: Views): NotificationsAcked {
  const unreadCount = feed.unread.filter((u) => shown(views, u.channelId)).reduce((sum, u) => sum + u.count, 0);
  return { unreadCount, lastReadId: feed.lastReadId };
}

/**
 * Moves the feed's read mark; answers the unread count as the feed shows it. A move is told to the
 * user's other sessions with the same answer (NOTIFICATIONS_ACK); an older mark changes nothing and
 * tells nobody. The channels counted are asked of guilds before the transaction; only one first
 * met inside it (an entry arrived meanwhile) is asked there.
 */
export async function ackFeed(deps: ReadStateDeps, ctx: RequestContext, until: string): Promise<NotificationsAcked> {
  if (!(await feedReaches(deps.pool, ctx.userId, until))) throw notFound('Notification');
  const views: Views = { visible: new Set(), hidden: new Set() };
  const learnUnread = async (db: Queryable) => {
    const feed = await feedUnread(db, ctx.userId);
    await learnViews(
      deps,
      ctx,
      views,
      feed.unread.map((u) => u.channelId),
    );
    return feed;
  };
  await learnUnread(deps.pool);
  return withTx(deps.pool, async (tx) => {
    const moved = await advanceFeedMark(tx, ctx.userId, until);
    const acked = countShown(await learnUnread(tx), views);
    if (moved) await enqueueEvent(tx, READ_STATE_SUBJECTS.notificationsAcked, { userId: ctx.userId, ...acked }, ctx.requestId);
    return acked;
  });
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

/**
 * A channel level is kept only for a channel of the server: one of another server would never
 * apply (settings are looked up by the message's server) nor go with its channel. 400 naming the
 * ids that are not (unknown ones too), asked of guilds in one question (rpc.guilds.server.channels.among).
 */
async function assertChannelsOf(deps: ReadStateDeps, ctx: RequestContext, serverId: string, channelIds: string[]): Promise<void> {
  if (channelIds.length === 0) return;
  const question = { serverId, channelIds };
  const ofServer = new Set((await requestRpc(deps.bus, ServerChannelsAmongRpc, question, { requestId: ctx.requestId })).channelIds);
  const foreign = channelIds.filter((id) => !ofServer.has(id));
  if (foreign.length > 0) throw badRequest(`channels: not channels of this server: ${foreign.join(', ')}`);
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
  await assertChannelsOf(deps, ctx, serverId, Object.keys(body.channels ?? {}));
  const settings: NotificationSettings = { serverId, level: body.level, muteUntil: body.muteUntil ?? null, channels: body.channels ?? {} };
  await saveSettings(deps.pool, ctx.userId, settings);
  return (await findSettings(deps.pool, ctx.userId, serverId)) as NotificationSettings;
}

// ---- Events ----

/**
 * A batch of users a channel message mentions (resolved by guilds). The users' settings decide
 * whether it counts; those it counts for get the mention (until they ack past it) and a feed entry.
 * Who had already read past the message gets the entry read and no mention (Discord's Recent
 * Mentions lists every mention, however soon the channel was read).
 */
export async function messageMentioned(tx: Queryable, m: MessageMentionedEvent): Promise<void> {
  const direct = m.via === 'user' || m.via === 'reply';
  const counting = await usersCounting(tx, { ...m, direct, at: m.createdAt });
  const { counted, readPast } = await recordMentions(tx, counting, m.channelId, m.messageId);
  const entry: Entry = {
    kind: m.via === 'reply' ? 'reply' : 'mention',
    via: m.via === 'reply' ? null : m.via,
    actorId: m.authorId,
    serverId: m.serverId,
    channelId: m.channelId,
    messageId: m.messageId,
    excerpt: m.excerpt,
    createdAt: m.createdAt,
  };
  await notify(tx, counted, entry, readPast);
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
 * An edited channel message: a mention the edit took out no longer counts nor stays in the feed (as
 * a delete takes it back; a mention an edit adds notifies nobody, as on Discord), and the entries
 * left show the new text, mentions named as guilds names them (users by display name, roles by
 * name, from social's read-models; a role never heard of shows as `@role`).
 */
export async function channelMessageEdited(tx: Queryable, message: z.output<typeof MessageEventData>): Promise<void> {
  const unmentioned = await forgetUnmadeMentions(tx, message.id, message.mentions);
  await forgetMentionsOfUsers(tx, message.id, unmentioned.userIds);
  await announceRemoved(tx, unmentioned);
  const names = { ...(await displayNames(tx, message.mentions.users)), ...(await roleNames(tx, message.mentions.roles)) };
  await setExcerptOf(tx, message.id, excerptOf(message.content, names));
}

/** A role's name, for the excerpts of edited messages that mention it. */
export function roleNamed(tx: Queryable, role: z.output<typeof Role>, at: string): Promise<void> {
  return saveRoleName(tx, role, at);
}

/** A page of every role's name from guilds, for a read-model that missed their events. */
export function roleNamesBackfilled(tx: Queryable, roles: { id: string; name: string }[]): Promise<void> {
  return saveOwnersRoleNames(tx, roles);
}

export function roleDeleted(tx: Queryable, event: z.output<typeof RoleDeletedEventData>): Promise<void> {
  return forgetRoleName(tx, event.id);
}

/**
 * Who left a server (left, kicked, banned) keeps no entry of its channels from before: they cannot
 * view them now; nor its settings (Discord keeps nothing of a server left), unless a rejoin wrote them.
 */
export async function serverLeft(tx: Queryable, event: z.output<typeof MemberLeftEventData>, at: string): Promise<void> {
  await announceRemoved(tx, await forgetServerChannelNotifications(tx, event.userId, event.serverId, at));
  await forgetServerMentions(tx, event.userId, event.serverId, at);
  await forgetMemberSettings(tx, event.userId, event.serverId, at);
}

/** A deleted server leaves no settings behind (its entries and mentions are hidden by guilds' answers). */
export async function serverDeleted(tx: Queryable, event: z.output<typeof ServerDeletedEventData>): Promise<void> {
  await forgetServerSettings(tx, event.id);
}

/** Who left a group keeps no entry of it (called in the leave's transaction). */
export async function conversationLeft(tx: Queryable, userId: string, conversationId: string, requestId?: string): Promise<void> {
  await announceRemoved(tx, await forgetConversationNotifications(tx, userId, conversationId), requestId);
}

/** A deleted message, in a channel or a conversation, leaves every feed. */
export async function messageLeftFeeds(tx: Queryable, messageId: string): Promise<void> {
  await announceRemoved(tx, await forgetNotificationsOf(tx, messageId));
}

/** A deleted channel message no longer counts as a mention nor stays in any feed. */
export async function channelMessageDeleted(tx: Queryable, deleted: z.output<typeof MessageDeletedEventData>): Promise<void> {
  await forgetMentionsOf(tx, deleted.id);
  await messageLeftFeeds(tx, deleted.id);
}

export function directMessageDeleted(tx: Queryable, event: z.output<typeof DmDeletedEvent>): Promise<void> {
  return messageLeftFeeds(tx, event.id);
}

/** A friend request that ended unanswered, or is asked again, leaves the feed (called in the change's transaction). */
export async function friendRequestEnded(tx: Queryable, a: string, b: string, requestId?: string): Promise<void> {
  await announceRemoved(tx, await forgetFriendRequestNotifications(tx, a, b), requestId);
}

/**
 * The recipient learns of a pending request: one entry per requester, however late the events of
 * earlier, cancelled requests are applied; none when the request is already gone.
 */
export async function friendRequested(tx: Queryable, event: z.output<typeof FriendRequestedEvent>): Promise<void> {
  if (!(await relationBetween(tx, event.requesterId, event.recipientId)).outgoing) return;
  await friendRequestEnded(tx, event.requesterId, event.recipientId);
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

/**
 * Whoever was still being rung when a call ended missed it (the caller aside), dated when their
 * ring stopped: the call's end, or `ringStoppedAt` for a ring that stopped in a call going on.
 */
export async function callEnded(tx: Queryable, event: CallEvent, ringStoppedAt?: string): Promise<void> {
  const { call } = event;
  const missed = call.participants.filter((p) => p.state === 'ringing' && p.userId !== call.initiatorId).map((p) => p.userId);
  await notify(tx, missed, {
    kind: 'missed_call',
    actorId: call.initiatorId,
    conversationId: call.conversationId,
    callId: call.id,
    createdAt: call.endedAt ?? ringStoppedAt ?? call.createdAt,
  });
}
