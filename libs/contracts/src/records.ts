import { z } from 'zod';
import { Id, PermissionMask, Timestamp } from './common.ts';

/** Records of spec section 2, field for field; `.meta({id})` names them in the OpenAPI document. */

export const UserStatus = z.enum(['online', 'idle', 'dnd', 'invisible', 'offline']);

export const User = z
  .object({
    id: Id,
    username: z.string(),
    displayName: z.string(),
    avatarUrl: z.string().nullable(),
    bio: z.string(),
    status: UserStatus,
    customStatus: z.string(),
    badges: z.array(z.string()),
    createdAt: Timestamp,
  })
  .meta({ id: 'User' });

/** The caller's own user: the public fields plus the email. */
export const SelfUser = User.extend({ email: z.string() }).meta({ id: 'SelfUser' });

export const TokenPair = z.object({ token: z.string(), refreshToken: z.string(), user: SelfUser }).meta({ id: 'TokenPair' });

export const Server = z
  .object({
    id: Id,
    name: z.string(),
    iconUrl: z.string().nullable(),
    bannerUrl: z.string().nullable(),
    description: z.string().nullable(),
    ownerId: Id,
    isPublic: z.boolean(),
    requireApproval: z.boolean(),
    entranceChannelId: Id.nullable(),
    afkChannelId: Id.nullable(),
    jtcChannelId: Id.nullable(),
    /** Seconds without activity after which a connected member is moved to the AFK channel. */
    afkTimeoutSeconds: z.number().int(),
    tags: z.array(z.string()),
    /** Roles whose members control music in musicLocked voice channels. */
    djRoleIds: z.array(Id),
    createdAt: Timestamp,
  })
  .meta({ id: 'Server' });

export const ChannelType = z.enum(['text', 'voice']);

export const Channel = z
  .object({
    id: Id,
    serverId: Id,
    categoryId: Id.nullable(),
    name: z.string(),
    topic: z.string().nullable(),
    channelType: ChannelType,
    position: z.number().int(),
    isNsfw: z.boolean(),
    slowmodeSeconds: z.number().int(),
    ownerId: Id.nullable(),
    isTemporary: z.boolean(),
    isLocked: z.boolean(),
    isHidden: z.boolean().meta({
      description:
        'Visible only to members with MANAGE_CHANNELS, its owner, members connected to it and those an override allows VIEW_CHANNEL; 404 to anyone else',
    }),
    userLimit: z.number().int(),
    musicLocked: z.boolean(),
    createdAt: Timestamp,
  })
  .meta({ id: 'Channel' });

export const Category = z
  .object({ id: Id, serverId: Id, name: z.string(), position: z.number().int(), createdAt: Timestamp })
  .meta({ id: 'Category' });

/** An upload as the media service answers it; messages carry these as attachments. */
export const UploadedFile = z
  .object({ url: z.string(), filename: z.string(), contentType: z.string(), size: z.number().int().min(0) })
  .meta({ id: 'UploadedFile' });

/** Attachments: an object whose entries are uploaded files (spec: `attachments` is an object). */
export const Attachments = z.record(z.string().max(64), UploadedFile);

/**
 * What kind of message (Discord's message types, by name): what people write is `default`, or
 * `reply` when it answers another message; the rest are written by the platform itself.
 */
export const MessageType = z
  .enum(['default', 'reply', 'member_join', 'pinned', 'call_started', 'call_missed', 'call_ended'])
  .meta({ id: 'MessageType' });
export type MessageType = z.infer<typeof MessageType>;

/** Discord's nonce: a client's own string, echoed in the answer to the post and in its created event, never stored. */
export const MessageNonce = z.string().max(25);

/** `{emoji: {count, me}}` */
export const Reactions = z.record(z.string(), z.object({ count: z.number().int(), me: z.boolean() }));

/**
 * A link preview (an embed on a message): what a page says about itself in its OpenGraph,
 * Twitter-card and head tags, or its oEmbed. `imageUrl` is a copy kept by this platform's media
 * service, never the other site's url, so that clients never contact it.
 */
export const LinkPreview = z
  .object({
    /** The url as the message (or the query) gave it, normalised. */
    url: z.url(),
    title: z.string().nullable(),
    description: z.string().nullable(),
    siteName: z.string().nullable(),
    imageUrl: z.url().nullable(),
    /** `og:type` or the oEmbed type (`website`, `article`, `video`, `photo`, ...); `image` for a direct image link; `link` when the page said nothing. */
    type: z.string(),
  })
  .meta({ id: 'LinkPreview' });
export type LinkPreview = z.infer<typeof LinkPreview>;

/** A message's link previews, filled in by media shortly after it is posted (none until then). */
export const Embeds = z.array(LinkPreview).max(5).default([]);

/**
 * What a call's system message points at (`call_started`, `call_missed`, `call_ended`, whose content
 * is empty like every system message): the call, and on `call_ended` how long it lasted in whole
 * seconds from its start (ringing) to its end, as Discord counts it; null on the other two.
 */
export const MessageCall = z.object({ id: Id, durationSeconds: z.number().int().min(0).nullable() }).meta({ id: 'MessageCall' });
export type MessageCall = z.infer<typeof MessageCall>;

export const DirectMessage = z
  .object({
    id: Id,
    conversationId: Id,
    senderId: Id,
    content: z.string(),
    attachments: Attachments,
    replyToId: Id.nullable(),
    editedAt: Timestamp.nullable(),
    createdAt: Timestamp,
    senderName: z.string(),
    senderAvatar: z.string().nullable(),
    senderBadges: z.array(z.string()),
    reactions: Reactions,
    type: MessageType,
    nonce: MessageNonce.optional(),
    embeds: Embeds,
    /** Set on call system messages only; absent in events of producers older than the field: null. */
    call: MessageCall.nullable().default(null),
  })
  .meta({ id: 'DirectMessage' });

export const PermissionOverride = z
  .object({
    id: Id,
    channelId: Id,
    roleId: Id.nullable(),
    userId: Id.nullable(),
    allowBits: PermissionMask,
    denyBits: PermissionMask,
    createdAt: Timestamp,
  })
  .meta({ id: 'ChannelPermissionOverride' });

export const Ban = z
  .object({
    serverId: Id,
    userId: Id,
    username: z.string(),
    displayName: z.string(),
    avatarUrl: z.string().nullable(),
    bannedBy: Id,
    reason: z.string().nullable(),
    createdAt: Timestamp,
  })
  .meta({ id: 'Ban' });

export const FriendRequestDirection = z.enum(['incoming', 'outgoing']);

export const PendingFriendRequest = z
  .object({
    user: z.object({ id: Id, username: z.string(), displayName: z.string(), avatarUrl: z.string().nullable(), status: z.string() }),
    direction: FriendRequestDirection,
    createdAt: Timestamp,
  })
  .meta({ id: 'PendingFriendRequest' });

export type Server = z.infer<typeof Server>;
export type Channel = z.infer<typeof Channel>;
export type Category = z.infer<typeof Category>;
export type PermissionOverride = z.infer<typeof PermissionOverride>;
export type Ban = z.infer<typeof Ban>;
