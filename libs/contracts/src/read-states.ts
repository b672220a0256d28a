import { z } from 'zod';
import { Id, StoredTimestamp, Timestamp } from './common.ts';
import { defineRpc } from './rpc.ts';

/**
 * Read states, mentions and notifications (social serves them, fed by events): the records, the
 * bodies and queries, the events guilds and social publish for them, and guilds' visibility RPC.
 * Permissions stay in guilds: it publishes each message's mentions already resolved to the users
 * who may view the channel, and answers which channels a user may view now.
 */

// ---- Records ----

export const ReadStateKind = z.enum(['channel', 'conversation']);
export type ReadStateKind = z.infer<typeof ReadStateKind>;

/**
 * Where the user has read up to in a channel or a conversation. `lastMessageId` is the newest
 * message ever posted in a channel (as on Discord it may name a message deleted since), and in a
 * conversation the newest one the user sees (none of the people they blocked); `unread` is true
 * when it is past `lastReadMessageId`; `mentionCount` counts the mentions (every message of the
 * others, in a conversation) past it.
 */
export const ReadState = z
  .object({
    id: Id,
    kind: ReadStateKind,
    lastReadMessageId: Id.nullable(),
    lastMessageId: Id.nullable(),
    unread: z.boolean(),
    mentionCount: z.number().int().min(0),
  })
  .meta({ id: 'ReadState' });
export type ReadState = z.infer<typeof ReadState>;

export const NotificationLevel = z.enum(['all', 'mentions', 'none']);
export type NotificationLevel = z.infer<typeof NotificationLevel>;

/** At most this many channels carry a level of their own in one server's settings. */
export const MAX_CHANNEL_LEVELS = 500;
const ChannelLevels = z
  .record(Id, NotificationLevel)
  .refine((c) => Object.keys(c).length <= MAX_CHANNEL_LEVELS, { error: `at most ${MAX_CHANNEL_LEVELS} channels` });

/**
 * A user's notification settings for one server (Discord's rules): `none` (server-wide, or for a
 * channel) keeps everything of it out; a server muted until `muteUntil` still counts direct
 * mentions and replies, not role or @everyone mentions. A channel's level overrides the server's.
 */
export const NotificationSettings = z
  .object({ serverId: Id, level: NotificationLevel, muteUntil: Timestamp.nullable(), channels: z.record(Id, NotificationLevel) })
  .meta({ id: 'NotificationSettings' });
export type NotificationSettings = z.infer<typeof NotificationSettings>;

/** How a channel message reached the user: named, through a role, @everyone/@here, or a reply to their message. */
export const MentionVia = z.enum(['user', 'role', 'everyone', 'reply']);
export type MentionVia = z.infer<typeof MentionVia>;

export const NotificationKind = z.enum([
  'mention',
  'reply',
  'dm_reply',
  'friend_request',
  'friend_accept',
  'join_request_approved',
  'join_request_rejected',
  'missed_call',
]);
export type NotificationKind = z.infer<typeof NotificationKind>;

/** The longest excerpt of a message a notification carries. */
export const EXCERPT_LENGTH = 100;

/**
 * One entry of the feed. `actorId` is who caused it (the author, the requester, the reviewer, the
 * caller); the other ids say where it happened, null when they do not apply.
 */
export const Notification = z
  .object({
    id: Id,
    kind: NotificationKind,
    /** For `mention`: how the message reached the user. */
    via: MentionVia.nullable(),
    actorId: Id.nullable(),
    serverId: Id.nullable(),
    channelId: Id.nullable(),
    conversationId: Id.nullable(),
    messageId: Id.nullable(),
    callId: Id.nullable(),
    excerpt: z.string().max(EXCERPT_LENGTH).nullable(),
    createdAt: Timestamp,
    read: z.boolean(),
  })
  .meta({ id: 'Notification' });
export type Notification = z.infer<typeof Notification>;

/** A page of the feed, newest first, and how many entries of the whole feed are unread. */
export const NotificationFeed = z
  .object({ unreadCount: z.number().int().min(0), lastReadId: Id.nullable(), notifications: z.array(Notification) })
  .meta({ id: 'NotificationFeed' });
export type NotificationFeed = z.infer<typeof NotificationFeed>;

export const NotificationsAcked = z
  .object({ unreadCount: z.number().int().min(0), lastReadId: Id.nullable() })
  .meta({ id: 'NotificationsAcked' });
export type NotificationsAcked = z.infer<typeof NotificationsAcked>;

/**
 * Feed entries that left the feed (their message deleted, the mention edited out, a server or group
 * left, a friend request ended). `ids` are every entry one change removed, of all the users it
 * touched: each mention batch has its own id, so one change may remove several.
 */
export const NotificationsDeleted = z.object({ ids: z.array(Id).min(1) }).meta({ id: 'NotificationsDeleted' });

// ---- Bodies, queries, params ----

/** Only forwards: an id older than the one stored changes nothing. */
export const AckBody = z.object({ messageId: Id });
export const AckChannelParams = z.object({ channelId: Id });
export const SettingsParams = z.object({ serverId: Id });

/** Replaces the server's settings: a missing `muteUntil` unmutes, missing `channels` clears their levels. */
export const PutNotificationSettingsBody = z.object({
  level: NotificationLevel,
  muteUntil: StoredTimestamp.nullish(),
  channels: ChannelLevels.optional(),
});
export type PutNotificationSettingsBody = z.infer<typeof PutNotificationSettingsBody>;

/** Newest first; `before` the last id of the previous page. */
export const NotificationsQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(50),
  before: Id.optional(),
});
export type NotificationsQuery = z.infer<typeof NotificationsQuery>;

/** Marks every entry up to and including `until` (a notification id) as read; only forwards. */
export const AckNotificationsBody = z.object({ until: Id });

// ---- Events (subject -> payload) ----

/** At most this many user ids travel in one `guilds.message.mentioned` event (about 20 KB). */
export const MENTION_BATCH_SIZE = 500;

/**
 * `guilds.message.mentioned`: users a channel message mentions, already resolved (direct, through
 * a role, @everyone/@here from an author allowed to, or a reply to their message) and filtered to
 * those who may view the channel now. A message with many such users comes in several events.
 */
export const MessageMentionedEvent = z.object({
  messageId: Id,
  channelId: Id,
  serverId: Id,
  authorId: Id,
  via: MentionVia,
  excerpt: z.string().max(EXCERPT_LENGTH),
  createdAt: Timestamp,
  userIds: z.array(Id).min(1).max(MENTION_BATCH_SIZE),
});
export type MessageMentionedEvent = z.infer<typeof MessageMentionedEvent>;

/** `social.readstate.updated`: the user acked; their other sessions follow (READ_STATE_UPDATE). */
export const ReadStateUpdatedEvent = z.object({ userId: Id, readState: ReadState });
/** `social.notification.created`: one entry, the same for every user named (NOTIFICATION_CREATE). */
export const NotificationCreatedEvent = z.object({ notification: Notification, userIds: z.array(Id).min(1) });
export type NotificationCreatedEvent = z.infer<typeof NotificationCreatedEvent>;
/** `social.notifications.acked`: the user's feed mark moved; their other sessions follow (NOTIFICATIONS_ACK, the REST answer). */
export const NotificationsAckedEvent = NotificationsAcked.extend({ userId: Id });
/**
 * `social.notifications.deleted`: one change removed these entries from these users' feeds
 * (NOTIFICATION_DELETE). One event per change, not per user nor per id: a message deleted in
 * a server of 10,000 mentioned members is one outbox row; a client drops the ids it holds and
 * ignores the others (ids of entries of the same message, which name nothing it may fetch).
 */
export const NotificationsDeletedEvent = NotificationsDeleted.extend({ userIds: z.array(Id).min(1) });

export const READ_STATE_SUBJECTS = {
  messageMentioned: 'guilds.message.mentioned',
  readStateUpdated: 'social.readstate.updated',
  notificationCreated: 'social.notification.created',
  notificationsAcked: 'social.notifications.acked',
  notificationsDeleted: 'social.notifications.deleted',
} as const;

export const READ_STATE_EVENTS = {
  [READ_STATE_SUBJECTS.messageMentioned]: MessageMentionedEvent,
  [READ_STATE_SUBJECTS.readStateUpdated]: ReadStateUpdatedEvent,
  [READ_STATE_SUBJECTS.notificationCreated]: NotificationCreatedEvent,
  [READ_STATE_SUBJECTS.notificationsAcked]: NotificationsAckedEvent,
  [READ_STATE_SUBJECTS.notificationsDeleted]: NotificationsDeletedEvent,
} as const;

// ---- Request/reply ----

/** At most this many channel ids in one visibility question. */
export const MAX_VISIBILITY_QUESTION = 1000;

/**
 * `rpc.guilds.channels.visible`: which of these channels may the user VIEW now (the permission
 * function of REST, overrides and hidden channels included)? Unknown channels are simply absent.
 * Asked once per request that needs it, never once per row.
 */
export const VisibleChannelsRequest = z.object({ userId: Id, channelIds: z.array(Id).max(MAX_VISIBILITY_QUESTION) });
export const VisibleChannelsReply = z.object({ channelIds: z.array(Id) });
export const VisibleChannelsRpc = defineRpc('rpc.guilds.channels.visible', VisibleChannelsRequest, VisibleChannelsReply);

/**
 * `rpc.guilds.channel.ackable`: may the user mark this channel read at this message? `viewable`:
 * the user may VIEW the channel now (as rpc.guilds.channels.visible answers); `holdsMessage`: the
 * message is one of the channel's, not deleted (a voice channel holds none). Social keeps no record
 * of which channel a message is in, so a mark at another channel's id would read past unseen ones.
 */
export const AckableRequest = z.object({ userId: Id, channelId: Id, messageId: Id });
export const AckableReply = z.object({ viewable: z.boolean(), holdsMessage: z.boolean() });
export type AckableReply = z.infer<typeof AckableReply>;
export const AckableRpc = defineRpc('rpc.guilds.channel.ackable', AckableRequest, AckableReply);

/**
 * `rpc.guilds.server.channels.among`: which of these ids are channels of this server (for the
 * channel levels of notification settings)? One question for all of them; the rest are absent.
 */
export const ServerChannelsAmongRequest = z.object({ serverId: Id, channelIds: z.array(Id).max(MAX_VISIBILITY_QUESTION) });
export const ServerChannelsAmongReply = z.object({ channelIds: z.array(Id) });
export const ServerChannelsAmongRpc = defineRpc('rpc.guilds.server.channels.among', ServerChannelsAmongRequest, ServerChannelsAmongReply);
