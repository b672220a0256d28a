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

/** `{emoji: {count, me}}` */
export const Reactions = z.record(z.string(), z.object({ count: z.number().int(), me: z.boolean() }));

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
