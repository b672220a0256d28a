import { z } from 'zod';
import { Call } from './calls.ts';
import { Id, PageQuery, Timestamp } from './common.ts';
import { Activity } from './games.ts';
import { Emoji } from './messages.ts';
import { Attachments, DirectMessage, MessageNonce, PendingFriendRequest } from './records.ts';

/** Schemas of the social area (friends, blocks, direct messages): bodies, records, events. */

export type DirectMessageRecord = z.infer<typeof DirectMessage>;
export type AttachmentsBody = z.infer<typeof Attachments>;

/** A user as friends, blocks and conversations show one: the spec's friend-request `user` object. */
export const UserSummary = PendingFriendRequest.shape.user;
export type UserSummary = z.infer<typeof UserSummary>;

export const UserIdBody = z.object({ userId: Id });
export const UserIdParams = z.object({ userId: Id });

/** Ask by `userId` or by `username` (case-insensitive); exactly one of the two. */
export const FriendRequestBody = z
  .object({ userId: Id.optional(), username: z.string().trim().min(1).max(32).optional() })
  .refine((b) => (b.userId === undefined) !== (b.username === undefined), { error: 'give exactly one of userId and username' });
export type FriendRequestBody = z.infer<typeof FriendRequestBody>;

/** `pending`: a request now waits for the other side; `accepted`: they had asked too, so you are friends. */
export const FriendRequestOutcome = z
  .object({ status: z.enum(['pending', 'accepted']), user: UserSummary })
  .meta({ id: 'FriendRequestOutcome' });

/** `activity`: what the friend is playing, present while they play (PUT /v1/users/@me/activity). */
export const Friend = z.object({ user: UserSummary, createdAt: Timestamp, activity: Activity.optional() }).meta({ id: 'Friend' });
export const BlockedUser = z.object({ user: UserSummary, createdAt: Timestamp }).meta({ id: 'BlockedUser' });

/** Everyone in a conversation, the caller included, is at most this many people. */
export const MAX_CONVERSATION_SIZE = 10;
export const MAX_DM_LENGTH = 4000;
export const MAX_ATTACHMENTS = 10;

/** The other people of the conversation; one id makes (or finds) the 1:1 conversation with them. */
export const CreateConversationBody = z.object({
  userIds: z
    .array(Id)
    .min(1)
    .max(MAX_CONVERSATION_SIZE - 1),
});

export const ConversationType = z.enum(['direct', 'group']);

export const Conversation = z
  .object({
    id: Id,
    type: ConversationType,
    /** Who created a group; null for a 1:1 conversation. */
    ownerId: Id.nullable(),
    participants: z.array(UserSummary),
    lastMessage: DirectMessage.nullable(),
    lastActivityAt: Timestamp,
    createdAt: Timestamp,
    /** The conversation's live call (ringing or active), null when there is none. */
    call: Call.nullable(),
  })
  .meta({ id: 'Conversation' });
export type Conversation = z.infer<typeof Conversation>;

/** `content` may be empty only when attachments are given (checked with the attachments). */
export const SendDirectMessageBody = z.object({
  conversationId: Id,
  content: z.string().max(MAX_DM_LENGTH).default(''),
  attachments: Attachments.refine((a) => Object.keys(a).length <= MAX_ATTACHMENTS, {
    error: `at most ${MAX_ATTACHMENTS} attachments`,
  }).optional(),
  replyToId: Id.optional(),
  nonce: MessageNonce.optional(),
});
export type SendDirectMessageBody = z.infer<typeof SendDirectMessageBody>;

export const EditDirectMessageBody = z.object({ content: z.string().max(MAX_DM_LENGTH) });

/** Newest first; `before` pages back in history, `after` pages forward from a message seen. */
export const MessagePageQuery = PageQuery.refine((q) => !(q.before && q.after), { error: 'give before or after, not both' });

/**
 * A unicode emoji or a custom `name:id`, as it appears URL-decoded in the path: the rule of channel
 * reactions. Answers and events (`Reactions`, DmReactionEvent) read any stored key, so a reaction
 * stored before this rule still shows.
 */
export const ReactionParams = z.object({ id: Id, emoji: Emoji });

export const SOCIAL_SUBJECTS = {
  friendRequested: 'social.friend.requested',
  friendAccepted: 'social.friend.accepted',
  friendRemoved: 'social.friend.removed',
  blockCreated: 'social.block.created',
  blockRemoved: 'social.block.removed',
  conversationCreated: 'social.conversation.created',
  conversationLeft: 'social.conversation.left',
  dmCreated: 'social.dm.created',
  dmUpdated: 'social.dm.updated',
  dmDeleted: 'social.dm.deleted',
  dmReactionAdded: 'social.dm.reaction.added',
  dmReactionRemoved: 'social.dm.reaction.removed',
} as const;

/**
 * Friend and block events carry both users as lists show them (`user`: who acted, `otherUser`: the
 * other one), so that each side's socket gets the record its own REST list holds (the gateway
 * fills in what others see of the user, the seen status, when it dispatches).
 */
export const FriendRequestedEvent = z.object({
  requesterId: Id,
  recipientId: Id,
  createdAt: Timestamp,
  requester: UserSummary,
  recipient: UserSummary,
});
export type FriendRequestedEvent = z.infer<typeof FriendRequestedEvent>;
/** The recipient accepted (or asked back, which accepts at once); `createdAt` is the friendship's. */
export const FriendAcceptedEvent = z.object({
  requesterId: Id,
  recipientId: Id,
  createdAt: Timestamp,
  requester: UserSummary,
  recipient: UserSummary,
});
export type FriendAcceptedEvent = z.infer<typeof FriendAcceptedEvent>;
/** A friendship or a pending request between `userId` (who acted) and `otherUserId` ended. */
export const FriendRemovedEvent = z.object({
  userId: Id,
  otherUserId: Id,
  relation: z.enum(['friend', 'request']),
  reason: z.enum(['unfriended', 'declined', 'cancelled', 'blocked']),
  /**
   * The reason `otherUserId` is told, when it is not `reason`: a block is told to the blocker only,
   * so the one blocked sees an unfriend, their request declined, or the blocker's request cancelled.
   */
  reasonShownToOther: z.enum(['unfriended', 'declined', 'cancelled']).optional(),
  user: UserSummary,
  otherUser: UserSummary,
});
export type FriendRemovedEvent = z.infer<typeof FriendRemovedEvent>;
/** `blockedUser` as the blocker's list of blocked users shows them; `createdAt` the block's. */
export const BlockEvent = z.object({ userId: Id, blockedUserId: Id, blockedUser: UserSummary, createdAt: Timestamp });
export type BlockEvent = z.infer<typeof BlockEvent>;

/**
 * FRIEND_REMOVE on the socket: the user the friendship or request was with, as the lists showed
 * them, what ended (`relation`) and why.
 */
export const FriendRemoval = z
  .object({ user: UserSummary, relation: FriendRemovedEvent.shape.relation, reason: FriendRemovedEvent.shape.reason })
  .meta({ id: 'FriendRemoval' });

/**
 * `conversation`: as its participants list it, less what each of them sees differently (the
 * others' status, which the gateway adds per participant); absent from events written before.
 */
export const ConversationCreatedEvent = z.object({
  conversationId: Id,
  type: ConversationType,
  participantIds: z.array(Id),
  conversation: Conversation.extend({ participants: z.array(UserSummary.omit({ status: true })) }).optional(),
});
export type ConversationCreatedEvent = z.infer<typeof ConversationCreatedEvent>;
/** `userId` left the group; `ownerId` is its owner now and `participantIds` who remain (empty: the group is gone). */
export const ConversationLeftEvent = z.object({ conversationId: Id, userId: Id, ownerId: Id.nullable(), participantIds: z.array(Id) });
/**
 * Reactions are per viewer (`me`), so message events leave them out; reaction events carry them.
 * `participantIds` of message and reaction events are the people it is delivered to: the
 * participants minus those who blocked its author (issue 16).
 */
export const DmMessageEvent = z.object({ message: DirectMessage.omit({ reactions: true }), participantIds: z.array(Id) });
export const DmDeletedEvent = z.object({ id: Id, conversationId: Id, participantIds: z.array(Id) });
export const DmReactionEvent = z.object({ messageId: Id, conversationId: Id, userId: Id, emoji: z.string(), participantIds: z.array(Id) });
