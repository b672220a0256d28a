import { z } from 'zod';
import { AUTH_SUBJECTS, SessionRevokedData, UserEventData } from './auth.ts';
import { CALL_SUBJECTS, Call } from './calls.ts';
import { Id, oneLineText, PermissionMask, Timestamp } from './common.ts';
import { ACTIVITY_SUBJECTS, Activity } from './games.ts';
import { GUILDS_EVENTS, GUILDS_SUBJECTS, Member } from './guilds.ts';
import { KEYS_SUBJECTS, KeysChangedEvent, KeysLowEvent } from './keys.ts';
import { MESSAGES_EVENTS, MESSAGES_SUBJECTS } from './messages.ts';
import { MUSIC_SUBJECTS, PlayerUpdatedEvent } from './music.ts';
import { ChosenStatus, SeenStatus } from './presence.ts';
import { Notification, NotificationsAcked, NotificationsDeleted, READ_STATE_SUBJECTS, ReadState } from './read-states.ts';
import { Ban, PendingFriendRequest, SelfUser } from './records.ts';
import { defineRpc } from './rpc.ts';
import {
  BlockedUser,
  Conversation,
  ConversationLeftEvent,
  DmDeletedEvent,
  DmMessageEvent,
  DmReactionEvent,
  Friend,
  FriendRemoval,
  SOCIAL_SUBJECTS,
} from './social.ts';
import { VOICE_EVENTS, VOICE_SUBJECTS } from './voice.ts';

/**
 * The real-time event socket (DESIGN.md "Real-time events"): frames `{op, d, s, t}` with Discord's
 * opcodes and close codes, the dispatch names and their payloads, and the bus messages the gateway
 * needs from the services to decide who receives what.
 */

export const OP = {
  DISPATCH: 0,
  HEARTBEAT: 1,
  IDENTIFY: 2,
  RESUME: 6,
  RECONNECT: 7,
  INVALID_SESSION: 9,
  HELLO: 10,
  HEARTBEAT_ACK: 11,
} as const;

export const CLOSE_CODES = {
  /** Something failed on our side (a service did not answer), or the client read too slowly: reconnect and resume. */
  UNKNOWN_ERROR: 4000,
  UNKNOWN_OPCODE: 4001,
  DECODE_ERROR: 4002,
  NOT_AUTHENTICATED: 4003,
  AUTHENTICATION_FAILED: 4004,
  ALREADY_AUTHENTICATED: 4005,
  INVALID_SEQ: 4007,
  RATE_LIMITED: 4008,
  SESSION_TIMED_OUT: 4009,
} as const;
export type CloseCode = (typeof CLOSE_CODES)[keyof typeof CLOSE_CODES];

// ---- Frames a client sends ----

/** `d` is the last sequence the client received (null before any dispatch). */
export const HeartbeatFrame = z.object({ op: z.literal(OP.HEARTBEAT), d: z.number().int().min(0).nullable() });
export const IdentifyFrame = z.object({ op: z.literal(OP.IDENTIFY), d: z.object({ token: z.string().min(1).max(4096) }) });
export const ResumeFrame = z.object({
  op: z.literal(OP.RESUME),
  d: z.object({ token: z.string().min(1).max(4096), sessionId: Id, seq: z.number().int().min(0) }),
});
export const ClientFrame = z.discriminatedUnion('op', [HeartbeatFrame, IdentifyFrame, ResumeFrame]).meta({ id: 'GatewayClientFrame' });
export type ClientFrame = z.infer<typeof ClientFrame>;
/** The opcodes a client may send; any other is closed with 4001. */
export const CLIENT_OPS: ReadonlySet<number> = new Set([OP.HEARTBEAT, OP.IDENTIFY, OP.RESUME]);

// ---- Frames the gateway sends ----

export const HelloFrame = z.object({
  op: z.literal(OP.HELLO),
  d: z.object({ heartbeatInterval: z.number().int().positive() }),
  s: z.null(),
  t: z.null(),
});
export const HeartbeatAckFrame = z.object({ op: z.literal(OP.HEARTBEAT_ACK), d: z.null(), s: z.null(), t: z.null() });
export const ReconnectFrame = z.object({ op: z.literal(OP.RECONNECT), d: z.null(), s: z.null(), t: z.null() });
export const InvalidSessionFrame = z.object({
  op: z.literal(OP.INVALID_SESSION),
  d: z.object({ resumable: z.boolean() }),
  s: z.null(),
  t: z.null(),
});
export const DispatchFrame = z.object({ op: z.literal(OP.DISPATCH), t: z.string(), s: z.number().int().positive(), d: z.unknown() });
export type DispatchFrame = z.infer<typeof DispatchFrame>;
export const ServerFrame = z
  .discriminatedUnion('op', [HelloFrame, HeartbeatAckFrame, ReconnectFrame, InvalidSessionFrame, DispatchFrame])
  .meta({ id: 'GatewayServerFrame' });
export type ServerFrame = z.infer<typeof ServerFrame>;

// ---- Dispatch payloads that no REST record describes ----

export const ReadyData = z
  .object({ sessionId: Id, user: SelfUser, serverIds: z.array(Id), conversationIds: z.array(Id) })
  .meta({ id: 'GatewayReady' });
export type ReadyData = z.infer<typeof ReadyData>;
export const ResumedData = z.object({ replayed: z.number().int().min(0) });

/** `activity`: what the user is playing (null when nothing, or when others see them offline). */
export const PresenceUpdateData = z
  .object({ userId: Id, status: SeenStatus, customStatus: z.string(), activity: Activity.nullable() })
  .meta({ id: 'PresenceUpdate' });
export type PresenceUpdateData = z.infer<typeof PresenceUpdateData>;

/** TYPING_START in a channel (serverId, channelId) or a conversation (conversationId). Lasts 10 s. */
export const TypingStartData = z
  .object({ userId: Id, timestamp: Timestamp, channelId: Id.optional(), serverId: Id.optional(), conversationId: Id.optional() })
  .meta({ id: 'TypingStart' });

// ---- Bus events the socket needs ----

/** `auth.session.revoked` (auth's contract): logout, password reset or refresh-token reuse ended this session. */
export const SessionRevokedEvent = SessionRevokedData;
/** `auth.presence.updated`: the status the user chose and their custom status. */
export const PresenceChosenEvent = z.object({ userId: Id, status: ChosenStatus, customStatus: z.string() });
export type PresenceChosenEvent = z.infer<typeof PresenceChosenEvent>;
/** `guilds.typing.started`: not stored, published straight to JetStream. */
export const ChannelTypingEvent = z.object({ channelId: Id, serverId: Id, userId: Id, timestamp: Timestamp });
/** `social.typing.started`: not stored, published straight to JetStream. */
export const ConversationTypingEvent = z.object({ conversationId: Id, userId: Id, participantIds: z.array(Id), timestamp: Timestamp });

/**
 * `gateway.user.disconnected`: the last session of the user closed on every replica (published by
 * the gateway straight to JetStream, stream GATEWAY, once per disconnection). `at` is when: social
 * clears an activity that started before it.
 */
export const UserDisconnectedEvent = z.object({ userId: Id, at: Timestamp });
export type UserDisconnectedEvent = z.infer<typeof UserDisconnectedEvent>;

export const REALTIME_SUBJECTS = {
  sessionRevoked: AUTH_SUBJECTS.sessionRevoked,
  presenceUpdated: 'auth.presence.updated',
  channelTyping: 'guilds.typing.started',
  conversationTyping: 'social.typing.started',
  activityUpdated: ACTIVITY_SUBJECTS.activityUpdated,
  userDisconnected: 'gateway.user.disconnected',
} as const;

export const PresenceBody = z.object({ status: ChosenStatus, customStatus: oneLineText(128).optional() });
export type PresenceBody = z.infer<typeof PresenceBody>;

// ---- RPCs the gateway asks ----

/** `rpc.auth.user.get`: the account as its owner sees it (READY's `user`), and the chosen status. 404 unknown. */
export const UserGetRequest = z.object({ userId: Id });
export const UserGetReply = SelfUser;
/** `rpc.guilds.user.servers`: the servers a user is a member of. */
export const UserServersRequest = z.object({ userId: Id });
export const UserServersReply = z.object({ serverIds: z.array(Id) });
/** `rpc.guilds.user.comembers`: everyone who shares a server with the user (the user excluded). */
export const UserComembersRequest = z.object({ userId: Id });
export const UserIdsReply = z.object({ userIds: z.array(Id) });
export type UserIdsReply = z.infer<typeof UserIdsReply>;
/**
 * `rpc.guilds.channel.viewers`: the members who may VIEW_CHANNEL now, computed by the permission
 * function of REST (overrides included). 404 for an unknown channel.
 */
export const ChannelViewersRequest = z.object({ channelId: Id });
export const ChannelViewersReply = z.object({ channelId: Id, serverId: Id, userIds: z.array(Id) });
export type ChannelViewersReply = z.infer<typeof ChannelViewersReply>;
/** `rpc.guilds.server.members`: the members (holding `permission` at server level when given). 404 unknown. */
export const ServerMembersRequest = z.object({ serverId: Id, permission: PermissionMask.optional() });
/** `rpc.social.user.conversations`: the conversations the user takes part in. */
export const UserConversationsRequest = z.object({ userId: Id });
export const UserConversationsReply = z.object({ conversationIds: z.array(Id) });
/** `rpc.social.user.friends`: the user's friends. */
export const UserFriendsRequest = z.object({ userId: Id });
/**
 * `rpc.social.user.contacts`: who may fetch the user's key bundles as far as social knows (friends
 * and people in a conversation with them, `userIds`), and everyone in a block with them either way
 * (`blockedIds`), whom nothing of the user's keys reaches even through a shared server.
 */
export const UserContactsRequest = z.object({ userId: Id });
export const UserContactsReply = z.object({ userIds: z.array(Id), blockedIds: z.array(Id) });

/** `rpc.gateway.presence.seen`: what others see of these users now (offline when not connected or invisible). */
/**
 * `viewerId`: answer as that user may see them: offline for anyone who is neither the viewer, nor
 * their friend, nor in a server with them. Ask with it whenever the users may be strangers to the
 * viewer: a profile, friend requests, blocked users, a conversation's participants. Only lists whose
 * every user is known to the viewer (their friends, a server's members) may ask without it.
 */
export const PresenceSeenRequest = z.object({ userIds: z.array(Id).max(1000), viewerId: Id.optional() });
export const PresenceSeenReply = z.object({ statuses: z.record(z.string(), SeenStatus) });

export const REALTIME_RPC = {
  presenceSeen: 'rpc.gateway.presence.seen',
  userGet: 'rpc.auth.user.get',
  userServers: 'rpc.guilds.user.servers',
  userComembers: 'rpc.guilds.user.comembers',
  channelViewers: 'rpc.guilds.channel.viewers',
  serverMembers: 'rpc.guilds.server.members',
  userConversations: 'rpc.social.user.conversations',
  userFriends: 'rpc.social.user.friends',
  userContacts: 'rpc.social.user.contacts',
} as const;

// ---- Dispatch names ----

/** The dispatch name (`t`) of each domain event subject: SCREAMING_SNAKE versions of the events. */
export const DISPATCH_NAMES = {
  [MESSAGES_SUBJECTS.messageCreated]: 'MESSAGE_CREATE',
  [MESSAGES_SUBJECTS.messageUpdated]: 'MESSAGE_UPDATE',
  [MESSAGES_SUBJECTS.messageDeleted]: 'MESSAGE_DELETE',
  [MESSAGES_SUBJECTS.reactionAdded]: 'REACTION_ADD',
  [MESSAGES_SUBJECTS.reactionRemoved]: 'REACTION_REMOVE',
  [MESSAGES_SUBJECTS.pinAdded]: 'CHANNEL_PIN_ADD',
  [MESSAGES_SUBJECTS.pinRemoved]: 'CHANNEL_PIN_REMOVE',
  [GUILDS_SUBJECTS.serverCreated]: 'SERVER_CREATE',
  [GUILDS_SUBJECTS.serverUpdated]: 'SERVER_UPDATE',
  [GUILDS_SUBJECTS.serverDeleted]: 'SERVER_DELETE',
  [GUILDS_SUBJECTS.memberJoined]: 'SERVER_MEMBER_ADD',
  [GUILDS_SUBJECTS.memberLeft]: 'SERVER_MEMBER_REMOVE',
  [GUILDS_SUBJECTS.memberUpdated]: 'SERVER_MEMBER_UPDATE',
  [GUILDS_SUBJECTS.memberBanned]: 'SERVER_BAN_ADD',
  [GUILDS_SUBJECTS.memberUnbanned]: 'SERVER_BAN_REMOVE',
  [GUILDS_SUBJECTS.categoryCreated]: 'CATEGORY_CREATE',
  [GUILDS_SUBJECTS.categoryUpdated]: 'CATEGORY_UPDATE',
  [GUILDS_SUBJECTS.categoryDeleted]: 'CATEGORY_DELETE',
  [GUILDS_SUBJECTS.channelCreated]: 'CHANNEL_CREATE',
  [GUILDS_SUBJECTS.channelUpdated]: 'CHANNEL_UPDATE',
  [GUILDS_SUBJECTS.channelDeleted]: 'CHANNEL_DELETE',
  // To those who gained or lost the view of a channel: the channel appears or goes, as on Discord.
  [GUILDS_SUBJECTS.channelRevealed]: 'CHANNEL_CREATE',
  [GUILDS_SUBJECTS.channelHidden]: 'CHANNEL_DELETE',
  [GUILDS_SUBJECTS.roleCreated]: 'ROLE_CREATE',
  [GUILDS_SUBJECTS.roleUpdated]: 'ROLE_UPDATE',
  [GUILDS_SUBJECTS.roleShifted]: 'ROLE_UPDATE',
  [GUILDS_SUBJECTS.roleDeleted]: 'ROLE_DELETE',
  [GUILDS_SUBJECTS.overrideUpdated]: 'CHANNEL_OVERRIDE_UPDATE',
  [GUILDS_SUBJECTS.overrideDeleted]: 'CHANNEL_OVERRIDE_DELETE',
  [GUILDS_SUBJECTS.joinRequestCreated]: 'JOIN_REQUEST_CREATE',
  [GUILDS_SUBJECTS.joinRequestReviewed]: 'JOIN_REQUEST_UPDATE',
  [VOICE_SUBJECTS.joined]: 'VOICE_STATE_UPDATE',
  [VOICE_SUBJECTS.updated]: 'VOICE_STATE_UPDATE',
  [VOICE_SUBJECTS.moved]: 'VOICE_STATE_UPDATE',
  [VOICE_SUBJECTS.left]: 'VOICE_STATE_DELETE',
  [MUSIC_SUBJECTS.playerUpdated]: 'MUSIC_PLAYER_UPDATE',
  [SOCIAL_SUBJECTS.conversationCreated]: 'DM_CONVERSATION_CREATE',
  [SOCIAL_SUBJECTS.conversationLeft]: 'DM_CONVERSATION_MEMBER_REMOVE',
  [SOCIAL_SUBJECTS.dmCreated]: 'DM_MESSAGE_CREATE',
  [SOCIAL_SUBJECTS.dmUpdated]: 'DM_MESSAGE_UPDATE',
  [SOCIAL_SUBJECTS.dmDeleted]: 'DM_MESSAGE_DELETE',
  [SOCIAL_SUBJECTS.dmReactionAdded]: 'DM_REACTION_ADD',
  [SOCIAL_SUBJECTS.dmReactionRemoved]: 'DM_REACTION_REMOVE',
  [CALL_SUBJECTS.created]: 'CALL_CREATE',
  [CALL_SUBJECTS.updated]: 'CALL_UPDATE',
  [CALL_SUBJECTS.ended]: 'CALL_DELETE',
  [SOCIAL_SUBJECTS.friendRequested]: 'FRIEND_REQUEST_CREATE',
  [SOCIAL_SUBJECTS.friendAccepted]: 'FRIEND_REQUEST_ACCEPT',
  [SOCIAL_SUBJECTS.friendRemoved]: 'FRIEND_REMOVE',
  [SOCIAL_SUBJECTS.blockCreated]: 'BLOCK_CREATE',
  [SOCIAL_SUBJECTS.blockRemoved]: 'BLOCK_DELETE',
  [KEYS_SUBJECTS.keysChanged]: 'KEYS_UPDATE',
  [KEYS_SUBJECTS.keysLow]: 'KEYS_LOW',
  [AUTH_SUBJECTS.userUpdated]: 'USER_UPDATE',
  [AUTH_SUBJECTS.accountUpdated]: 'USER_UPDATE',
  [REALTIME_SUBJECTS.presenceUpdated]: 'PRESENCE_UPDATE',
  [REALTIME_SUBJECTS.channelTyping]: 'TYPING_START',
  [REALTIME_SUBJECTS.conversationTyping]: 'TYPING_START',
  [READ_STATE_SUBJECTS.readStateUpdated]: 'READ_STATE_UPDATE',
  [READ_STATE_SUBJECTS.notificationCreated]: 'NOTIFICATION_CREATE',
  [READ_STATE_SUBJECTS.notificationsAcked]: 'NOTIFICATIONS_ACK',
  [READ_STATE_SUBJECTS.notificationsDeleted]: 'NOTIFICATION_DELETE',
} as const;
export type DispatchName = (typeof DISPATCH_NAMES)[keyof typeof DISPATCH_NAMES] | 'READY' | 'RESUMED';

/** The payload schema (`d`) of each dispatch: the record the REST API returns where there is one. */
export const DISPATCH_PAYLOADS = {
  READY: ReadyData,
  RESUMED: ResumedData,
  MESSAGE_CREATE: MESSAGES_EVENTS[MESSAGES_SUBJECTS.messageCreated],
  MESSAGE_UPDATE: MESSAGES_EVENTS[MESSAGES_SUBJECTS.messageUpdated],
  MESSAGE_DELETE: MESSAGES_EVENTS[MESSAGES_SUBJECTS.messageDeleted],
  REACTION_ADD: MESSAGES_EVENTS[MESSAGES_SUBJECTS.reactionAdded],
  REACTION_REMOVE: MESSAGES_EVENTS[MESSAGES_SUBJECTS.reactionRemoved],
  CHANNEL_PIN_ADD: MESSAGES_EVENTS[MESSAGES_SUBJECTS.pinAdded],
  CHANNEL_PIN_REMOVE: MESSAGES_EVENTS[MESSAGES_SUBJECTS.pinRemoved],
  SERVER_CREATE: GUILDS_EVENTS[GUILDS_SUBJECTS.serverCreated],
  SERVER_UPDATE: GUILDS_EVENTS[GUILDS_SUBJECTS.serverUpdated],
  SERVER_DELETE: GUILDS_EVENTS[GUILDS_SUBJECTS.serverDeleted].omit({ memberIds: true }),
  // The member and the ban as REST lists them; the gateway adds what others see of the member now.
  SERVER_MEMBER_ADD: Member,
  // Not `by`: who kicked or banned is for those with BAN_MEMBERS (SERVER_BAN_ADD), not every member, as on Discord.
  SERVER_MEMBER_REMOVE: GUILDS_EVENTS[GUILDS_SUBJECTS.memberLeft].omit({ by: true }),
  SERVER_MEMBER_UPDATE: Member,
  SERVER_BAN_ADD: Ban,
  SERVER_BAN_REMOVE: GUILDS_EVENTS[GUILDS_SUBJECTS.memberUnbanned],
  CATEGORY_CREATE: GUILDS_EVENTS[GUILDS_SUBJECTS.categoryCreated],
  CATEGORY_UPDATE: GUILDS_EVENTS[GUILDS_SUBJECTS.categoryUpdated],
  CATEGORY_DELETE: GUILDS_EVENTS[GUILDS_SUBJECTS.categoryDeleted],
  CHANNEL_CREATE: GUILDS_EVENTS[GUILDS_SUBJECTS.channelCreated],
  CHANNEL_UPDATE: GUILDS_EVENTS[GUILDS_SUBJECTS.channelUpdated],
  // The audience lists are the gateway's to route by, not a roster for every client.
  CHANNEL_DELETE: GUILDS_EVENTS[GUILDS_SUBJECTS.channelDeleted].omit({ viewerIds: true }),
  ROLE_CREATE: GUILDS_EVENTS[GUILDS_SUBJECTS.roleCreated],
  ROLE_UPDATE: GUILDS_EVENTS[GUILDS_SUBJECTS.roleUpdated],
  ROLE_DELETE: GUILDS_EVENTS[GUILDS_SUBJECTS.roleDeleted],
  CHANNEL_OVERRIDE_UPDATE: GUILDS_EVENTS[GUILDS_SUBJECTS.overrideUpdated],
  CHANNEL_OVERRIDE_DELETE: GUILDS_EVENTS[GUILDS_SUBJECTS.overrideDeleted],
  JOIN_REQUEST_CREATE: GUILDS_EVENTS[GUILDS_SUBJECTS.joinRequestCreated],
  JOIN_REQUEST_UPDATE: GUILDS_EVENTS[GUILDS_SUBJECTS.joinRequestReviewed],
  VOICE_STATE_UPDATE: VOICE_EVENTS[VOICE_SUBJECTS.joined],
  // As CHANNEL_DELETE: the viewers of a deleted channel are the gateway's to route by;
  // `channelEmptied` is for music (it pauses the player), not for clients.
  VOICE_STATE_DELETE: VOICE_EVENTS[VOICE_SUBJECTS.left].omit({ viewerIds: true, channelEmptied: true }),
  MUSIC_PLAYER_UPDATE: PlayerUpdatedEvent,
  // The conversation as the recipient's list shows it (GET /v1/dm/conversations).
  DM_CONVERSATION_CREATE: Conversation,
  // As SERVER_MEMBER_REMOVE: to those who remain and to the one who left (the group is gone for
  // them; `ownerId` null: gone for everyone). Who remains is the gateway's to route by.
  DM_CONVERSATION_MEMBER_REMOVE: ConversationLeftEvent.omit({ participantIds: true }),
  DM_MESSAGE_CREATE: DmMessageEvent.shape.message,
  DM_MESSAGE_UPDATE: DmMessageEvent.shape.message,
  DM_MESSAGE_DELETE: DmDeletedEvent.omit({ participantIds: true }),
  DM_REACTION_ADD: DmReactionEvent.omit({ participantIds: true }),
  DM_REACTION_REMOVE: DmReactionEvent.omit({ participantIds: true }),
  CALL_CREATE: Call,
  CALL_UPDATE: Call,
  CALL_DELETE: Call,
  // Friend and block dispatches: the record each side's REST list holds (GET /v1/friends/requests,
  // /v1/friends, /v1/friends/blocked), the other user's status as others see it.
  FRIEND_REQUEST_CREATE: PendingFriendRequest,
  FRIEND_REQUEST_ACCEPT: Friend,
  FRIEND_REMOVE: FriendRemoval,
  BLOCK_CREATE: BlockedUser,
  BLOCK_DELETE: BlockedUser,
  KEYS_UPDATE: KeysChangedEvent,
  // The owner's own devices running low; the owner alone receives it, so `userId` says nothing.
  KEYS_LOW: KeysLowEvent.omit({ userId: true }),
  // To the user's own sessions the account as GET /v1/users/@me shows it (READY's `user`); to
  // friends and co-members the public fields a name or avatar change touched.
  USER_UPDATE: z.union([SelfUser, UserEventData]),
  PRESENCE_UPDATE: PresenceUpdateData,
  TYPING_START: TypingStartData,
  READ_STATE_UPDATE: ReadState,
  NOTIFICATION_CREATE: Notification,
  // The REST answer of POST /v1/notifications/ack; the user alone receives it, so no `userId`.
  NOTIFICATIONS_ACK: NotificationsAcked,
  NOTIFICATION_DELETE: NotificationsDeleted,
} satisfies Record<DispatchName, z.ZodType>;

/** What each dispatch's `d` holds, as the gateway sends it (clients type their handlers with it). */
export type DispatchPayloads = { [T in DispatchName]: z.output<(typeof DISPATCH_PAYLOADS)[T]> };

// ---- RPC contracts (one per subject: requestRpc parses the reply, serveRpc what it sends) ----

export const UserGetRpc = defineRpc(REALTIME_RPC.userGet, UserGetRequest, UserGetReply);
export const UserServersRpc = defineRpc(REALTIME_RPC.userServers, UserServersRequest, UserServersReply);
export const UserComembersRpc = defineRpc(REALTIME_RPC.userComembers, UserComembersRequest, UserIdsReply);
export const ChannelViewersRpc = defineRpc(REALTIME_RPC.channelViewers, ChannelViewersRequest, ChannelViewersReply);
export const ServerMembersRpc = defineRpc(REALTIME_RPC.serverMembers, ServerMembersRequest, UserIdsReply);
export const UserConversationsRpc = defineRpc(REALTIME_RPC.userConversations, UserConversationsRequest, UserConversationsReply);
export const UserFriendsRpc = defineRpc(REALTIME_RPC.userFriends, UserFriendsRequest, UserIdsReply);
export const UserContactsRpc = defineRpc(REALTIME_RPC.userContacts, UserContactsRequest, UserContactsReply);
export const PresenceSeenRpc = defineRpc(REALTIME_RPC.presenceSeen, PresenceSeenRequest, PresenceSeenReply);
