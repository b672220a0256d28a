import { z } from 'zod';
import { DefinedPermissionMask, Id, ImageUrl, ListPageQuery, multiLineText, PermissionMask, shownName, Timestamp } from './common.ts';
import { Activity } from './games.ts';
import { Permission, type PermissionName } from './permissions.ts';
import { SeenStatus } from './presence.ts';
import { Ban, Category, Channel, ChannelType, PermissionOverride, Server } from './records.ts';
import { defineRpc } from './rpc.ts';

/**
 * Schemas of the guilds area: records the spec leaves open (shaped as Discord's), request bodies,
 * queries, events and RPC messages.
 */

// ---- Records the spec does not show ----

export const Role = z
  .object({
    id: Id,
    serverId: Id,
    name: z.string(),
    /** RGB as an integer, 0 for none (Discord). */
    color: z.number().int(),
    permissions: PermissionMask,
    /** 0 is @everyone (whose id is the server's id); higher outranks lower. */
    position: z.number().int(),
    hoist: z.boolean(),
    mentionable: z.boolean(),
    createdAt: Timestamp,
  })
  .meta({ id: 'Role' });
export type Role = z.infer<typeof Role>;

/** A user as the guilds read-model knows them (fed by auth's events). */
export const MemberUser = z.object({ id: Id, username: z.string(), displayName: z.string(), avatarUrl: z.string().nullable() });

export const Member = z
  .object({
    serverId: Id,
    userId: Id,
    nickname: z.string().nullable(),
    /** Role ids besides @everyone, which every member has. */
    roleIds: z.array(Id),
    joinedAt: Timestamp,
    /** null until auth's event about this user has arrived; `badges` as auth announced them. */
    user: MemberUser.extend({ badges: z.array(z.string()) }).nullable(),
    /** What others see of the member now: `offline` when no session is connected or they are invisible. */
    status: SeenStatus,
    /** What the member is playing, present while they play and others see them (social's activity events). */
    activity: Activity.optional(),
  })
  .meta({ id: 'Member' });
export type Member = z.infer<typeof Member>;

export const Invite = z
  .object({
    code: z.string(),
    serverId: Id,
    inviterId: Id,
    uses: z.number().int(),
    /** 0: unlimited. */
    maxUses: z.number().int(),
    /** null: never expires. */
    expiresAt: Timestamp.nullable(),
    createdAt: Timestamp,
  })
  .meta({ id: 'Invite' });
export type Invite = z.infer<typeof Invite>;

export const InvitePreview = z
  .object({
    code: z.string(),
    server: z.object({
      id: Id,
      name: z.string(),
      iconUrl: z.string().nullable(),
      description: z.string().nullable(),
      memberCount: z.number().int(),
    }),
    expiresAt: Timestamp.nullable(),
  })
  .meta({ id: 'InvitePreview' });
export type InvitePreview = z.infer<typeof InvitePreview>;

export const JoinRequestStatus = z.enum(['pending', 'approved', 'rejected']);

export const JoinRequest = z
  .object({
    id: Id,
    serverId: Id,
    userId: Id,
    message: z.string().nullable(),
    status: JoinRequestStatus,
    reviewedBy: Id.nullable(),
    reviewedAt: Timestamp.nullable(),
    createdAt: Timestamp,
  })
  .meta({ id: 'JoinRequest' });
export type JoinRequest = z.infer<typeof JoinRequest>;

export const DiscoveryServer = Server.extend({ memberCount: z.number().int() }).meta({ id: 'DiscoveryServer' });
export type DiscoveryServer = z.infer<typeof DiscoveryServer>;

export const PermissionsReply = z.object({ permissions: PermissionMask }).meta({ id: 'Permissions' });

/** What last decided a permission bit, in the order of DESIGN.md's algorithm. */
export const PermissionSource = z.enum([
  'owner',
  'administrator',
  'everyone',
  'role',
  'none',
  'everyoneOverride',
  'roleOverride',
  'memberOverride',
  'noViewChannel',
  'hidden',
]);
export type PermissionSource = z.infer<typeof PermissionSource>;

export const PermissionDecision = z
  .object({
    permission: z.enum(Object.keys(Permission) as [PermissionName, ...PermissionName[]]),
    granted: z.boolean(),
    source: PermissionSource,
    /** The role that decided (for administrator, role and roleOverride; the @everyone role's id is the server's). */
    roleId: Id.nullable(),
  })
  .meta({ id: 'PermissionDecision' });

/** The mask, plus with `explain=true` one decision per permission bit, from the function that enforces. */
export const ExplainedPermissionsReply = z
  .object({ permissions: PermissionMask, explanation: z.array(PermissionDecision).optional() })
  .meta({ id: 'ExplainedPermissions' });
export type ExplainedPermissionsReply = z.infer<typeof ExplainedPermissionsReply>;

export const ExplainQuery = z.object({
  /** `true` adds, for every permission bit, whether it is granted and what decided it. */
  explain: z.enum(['true', 'false']).default('false'),
});

// ---- Field rules shared by bodies ----

const ServerName = shownName(2, 100);
/** In NFC as names are, so that discovery's search finds it in either spelling of an accent. */
const Description = multiLineText(1000).normalize('NFC');
/** Shown in discovery like names (so in NFC); one spelling per tag, as the tag filter ignores case. */
const Tags = z
  .array(shownName(1, 24))
  .max(10)
  .transform((tags) => tags.filter((tag, i) => tags.findIndex((t) => t.toLowerCase() === tag.toLowerCase()) === i));
const ChannelName = shownName(1, 100);
const Topic = multiLineText(1024);
const CategoryName = shownName(1, 100);
const RoleName = shownName(1, 100);
const Color = z.number().int().min(0).max(0xffffff);

// ---- Bodies ----

export const CreateServerBody = z.object({
  name: ServerName,
  description: Description.nullish(),
  iconUrl: ImageUrl.nullish(),
  isPublic: z.boolean().default(false),
  requireApproval: z.boolean().default(false),
  tags: Tags.default([]),
});
export type CreateServerBody = z.infer<typeof CreateServerBody>;

export const UpdateServerBody = z.object({
  name: ServerName.optional(),
  description: Description.nullable().optional(),
  iconUrl: ImageUrl.nullable().optional(),
  bannerUrl: ImageUrl.nullable().optional(),
  entranceChannelId: Id.nullable().optional(),
  afkChannelId: Id.nullable().optional(),
  jtcChannelId: Id.nullable().optional(),
  /** Discord's choices: 1, 5, 15, 30 or 60 minutes. */
  afkTimeoutSeconds: z.union([z.literal(60), z.literal(300), z.literal(900), z.literal(1800), z.literal(3600)]).optional(),
  isPublic: z.boolean().optional(),
  requireApproval: z.boolean().optional(),
  tags: Tags.optional(),
  /** At most 10 roles of this server; their members control music in musicLocked channels. */
  djRoleIds: z
    .array(Id)
    .max(10)
    .transform((ids) => [...new Set(ids)])
    .optional(),
});
export type UpdateServerBody = z.infer<typeof UpdateServerBody>;

export const DiscoveryQuery = z.object({
  /** In NFC, as names, descriptions and tags are stored. */
  q: z.string().trim().normalize('NFC').max(100).optional(),
  tag: z.string().trim().normalize('NFC').min(1).max(24).optional(),
  limit: z.coerce.number().int().min(1).max(100).default(50),
  /** The last server of the previous page. */
  before: Id.optional(),
  /**
   * `before`'s memberCount as the previous page showed it: the cursor is then (that count, its id),
   * so paging neither repeats nor skips servers whose counts change meanwhile. Without it, `before`'s
   * count now is the cursor.
   */
  beforeMemberCount: z.coerce.number().int().min(0).max(2_147_483_647).optional(),
});

export const CategoryBody = z.object({ name: CategoryName });
export const CategoryPositionsBody = z.object({ categoryIds: z.array(Id).max(500) });
export const ChannelPositionsBody = z.object({ channelIds: z.array(Id).max(500), categoryId: Id.nullish() });

export const CreateChannelBody = z.object({
  name: ChannelName,
  channelType: ChannelType,
  categoryId: Id.nullish(),
  topic: Topic.nullish(),
});
export type CreateChannelBody = z.infer<typeof CreateChannelBody>;

export const UpdateChannelBody = z.object({
  name: ChannelName.optional(),
  topic: Topic.nullable().optional(),
  /** Index among the channels of its (new) category; past the end means last. Siblings are renumbered 0..n-1. */
  position: z.number().int().min(0).max(10_000).optional(),
  /** Moves it to the end of that category (or to `position` in it); null: uncategorised. */
  categoryId: Id.nullable().optional(),
  isNsfw: z.boolean().optional(),
  slowmodeSeconds: z.number().int().min(0).max(21_600).optional(),
  userLimit: z.number().int().min(0).max(99).optional(),
  isLocked: z.boolean().optional(),
  isHidden: z.boolean().optional(),
  musicLocked: z.boolean().optional(),
});
export type UpdateChannelBody = z.infer<typeof UpdateChannelBody>;

export const MembersQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(50),
  /** The last user id of the previous page (members are ordered by user id). */
  after: Id.optional(),
});

export const UpdateMemberBody = z.object({ nickname: shownName(1, 32).nullable() });

export const CreateRoleBody = z.object({
  name: RoleName.default('new role'),
  color: Color.default(0),
  permissions: DefinedPermissionMask.default(0),
  hoist: z.boolean().default(false),
  mentionable: z.boolean().default(false),
});
export type CreateRoleBody = z.infer<typeof CreateRoleBody>;

export const UpdateRoleBody = z.object({
  name: RoleName.optional(),
  color: Color.optional(),
  permissions: DefinedPermissionMask.optional(),
  position: z.number().int().min(1).max(250).optional(),
  hoist: z.boolean().optional(),
  mentionable: z.boolean().optional(),
});
export type UpdateRoleBody = z.infer<typeof UpdateRoleBody>;

export const BanBody = z.object({ reason: multiLineText(512).trim().nullish() });

export const CreateInviteBody = z.object({
  /** 0: unlimited. */
  maxUses: z.number().int().min(0).max(100).default(0),
  /** 0: never expires; Discord's default is one day. */
  maxAgeSeconds: z.number().int().min(0).max(604_800).default(86_400),
});

export const CreateJoinRequestBody = z.object({ message: multiLineText(500).trim().nullish() });
export const JoinRequestsQuery = ListPageQuery.extend({ status: JoinRequestStatus.default('pending') });

export const PutOverrideBody = z
  .object({ roleId: Id.optional(), userId: Id.optional(), allowBits: DefinedPermissionMask, denyBits: DefinedPermissionMask })
  .refine((b) => (b.roleId === undefined) !== (b.userId === undefined), { message: 'give exactly one of roleId and userId' });
export type PutOverrideBody = z.infer<typeof PutOverrideBody>;

// ---- Params ----

export const ServerParams = z.object({ serverId: Id });
export const ChannelParams = z.object({ channelId: Id });
export const CategoryParams = z.object({ serverId: Id, categoryId: Id });
export const MemberParams = z.object({ serverId: Id, userId: Id });
export const RoleParams = z.object({ serverId: Id, roleId: Id });
export const MemberRoleParams = z.object({ serverId: Id, userId: Id, roleId: Id });
export const JoinRequestParams = z.object({ serverId: Id, requestId: Id });
export const OverrideParams = z.object({ channelId: Id, overrideId: Id });
export const ChannelMemberParams = z.object({ channelId: Id, userId: Id });
export const InviteParams = z.object({ code: z.string().regex(/^[A-Za-z0-9]{8,32}$/, 'not an invite code') });

// ---- Events (subject -> payload) ----

export const MemberEventData = z.object({ serverId: Id, userId: Id });
export const MemberLeftEventData = MemberEventData.extend({ reason: z.enum(['left', 'kicked', 'banned']), by: Id.nullable() });
/**
 * A joined or changed member as REST lists it, less what the gateway adds when it dispatches (what
 * others see of them now: status, activity). Optional where events written before carried less.
 */
const { joinedAt, user } = Member.shape;
export const MemberUpdatedEventData = MemberEventData.extend({
  nickname: z.string().nullable(),
  roleIds: z.array(Id),
  joinedAt: joinedAt.optional(),
  user: user.optional(),
});
export const MemberJoinedEventData = MemberUpdatedEventData.partial({ nickname: true, roleIds: true });
/** The ban as GET /v1/servers/{id}/bans lists it; the user's names optional where events written before lacked them. */
export const MemberBannedEventData = Ban.partial().extend(MemberEventData.shape).extend({ bannedBy: Id, reason: z.string().nullable() });
/** `memberIds`: who was a member when it was deleted (the socket tells them; the members are gone). */
export const ServerDeletedEventData = z.object({ id: Id, memberIds: z.array(Id).optional() });
/** `viewerIds`: who could view the channel when it was deleted (only they are told; older events lack it). */
export const ChannelDeletedEventData = z.object({ id: Id, serverId: Id, viewerIds: z.array(Id).optional() });
/**
 * Members who gained the view of these channels through a change of roles, overrides or a channel's
 * hidden flag (the socket tells them a CHANNEL_CREATE per channel); a big change comes in several events.
 */
export const ChannelRevealedEventData = z.object({ channels: z.array(Channel), userIds: z.array(Id) });
/** Members who lost the view of these channels the same way (the socket tells them a CHANNEL_DELETE per channel). */
export const ChannelHiddenEventData = z.object({ serverId: Id, ids: z.array(Id), userIds: z.array(Id) });
export const CategoryDeletedEventData = z.object({ id: Id, serverId: Id });
export const RoleDeletedEventData = z.object({ id: Id, serverId: Id });
export const OverrideDeletedEventData = z.object({ id: Id, channelId: Id });
export const InviteDeletedEventData = z.object({ code: z.string(), serverId: Id });

export const GUILDS_SUBJECTS = {
  serverCreated: 'guilds.server.created',
  serverUpdated: 'guilds.server.updated',
  serverDeleted: 'guilds.server.deleted',
  memberJoined: 'guilds.member.joined',
  memberLeft: 'guilds.member.left',
  memberUpdated: 'guilds.member.updated',
  memberBanned: 'guilds.member.banned',
  memberUnbanned: 'guilds.member.unbanned',
  categoryCreated: 'guilds.category.created',
  categoryUpdated: 'guilds.category.updated',
  categoryDeleted: 'guilds.category.deleted',
  channelCreated: 'guilds.channel.created',
  channelUpdated: 'guilds.channel.updated',
  channelDeleted: 'guilds.channel.deleted',
  channelRevealed: 'guilds.channel.revealed',
  channelHidden: 'guilds.channel.hidden',
  roleCreated: 'guilds.role.created',
  roleUpdated: 'guilds.role.updated',
  // Only its position moved, as another role was created, moved or deleted: who sees what is unchanged.
  roleShifted: 'guilds.role.shifted',
  roleDeleted: 'guilds.role.deleted',
  overrideUpdated: 'guilds.override.updated',
  overrideDeleted: 'guilds.override.deleted',
  inviteCreated: 'guilds.invite.created',
  inviteDeleted: 'guilds.invite.deleted',
  joinRequestCreated: 'guilds.joinrequest.created',
  joinRequestReviewed: 'guilds.joinrequest.reviewed',
} as const;

/** Payload schema of each event subject. */
export const GUILDS_EVENTS = {
  [GUILDS_SUBJECTS.serverCreated]: Server,
  [GUILDS_SUBJECTS.serverUpdated]: Server,
  [GUILDS_SUBJECTS.serverDeleted]: ServerDeletedEventData,
  [GUILDS_SUBJECTS.memberJoined]: MemberJoinedEventData,
  [GUILDS_SUBJECTS.memberLeft]: MemberLeftEventData,
  [GUILDS_SUBJECTS.memberUpdated]: MemberUpdatedEventData,
  [GUILDS_SUBJECTS.memberBanned]: MemberBannedEventData,
  [GUILDS_SUBJECTS.memberUnbanned]: MemberEventData,
  [GUILDS_SUBJECTS.categoryCreated]: Category,
  [GUILDS_SUBJECTS.categoryUpdated]: Category,
  [GUILDS_SUBJECTS.categoryDeleted]: CategoryDeletedEventData,
  [GUILDS_SUBJECTS.channelCreated]: Channel,
  [GUILDS_SUBJECTS.channelUpdated]: Channel,
  [GUILDS_SUBJECTS.channelDeleted]: ChannelDeletedEventData,
  [GUILDS_SUBJECTS.channelRevealed]: ChannelRevealedEventData,
  [GUILDS_SUBJECTS.channelHidden]: ChannelHiddenEventData,
  [GUILDS_SUBJECTS.roleCreated]: Role,
  [GUILDS_SUBJECTS.roleUpdated]: Role,
  [GUILDS_SUBJECTS.roleShifted]: Role,
  [GUILDS_SUBJECTS.roleDeleted]: RoleDeletedEventData,
  [GUILDS_SUBJECTS.overrideUpdated]: PermissionOverride,
  [GUILDS_SUBJECTS.overrideDeleted]: OverrideDeletedEventData,
  [GUILDS_SUBJECTS.inviteCreated]: Invite,
  [GUILDS_SUBJECTS.inviteDeleted]: InviteDeletedEventData,
  [GUILDS_SUBJECTS.joinRequestCreated]: JoinRequest,
  [GUILDS_SUBJECTS.joinRequestReviewed]: JoinRequest,
} as const;

// ---- Request/reply ----

/** `rpc.guilds.member.check`: is this user a member of this server? 404 for an unknown server. */
export const MemberCheckRequest = z.object({ serverId: Id, userId: Id });
export const MemberCheckReply = z.object({ isMember: z.boolean(), isOwner: z.boolean() });
export type MemberCheckReply = z.infer<typeof MemberCheckReply>;

/**
 * `rpc.guilds.channel.permissions`: what may this user do in this channel? The channel-level mask
 * (0 for a non-member or a channel they cannot view). 404 for an unknown channel.
 */
export const ChannelPermissionsRequest = z.object({ channelId: Id, userId: Id });
export const ChannelPermissionsReply = z.object({ channelId: Id, serverId: Id, isMember: z.boolean(), permissions: PermissionMask });
export type ChannelPermissionsReply = z.infer<typeof ChannelPermissionsReply>;

/** `rpc.guilds.channel.get`: the Channel record. 404 for an unknown channel. */
export const ChannelGetRequest = z.object({ channelId: Id });
export const ChannelGetReply = Channel;

/**
 * `rpc.guilds.members.shared`: which of `otherUserIds` share at least one server with `userId`?
 * One question per request (social's key-bundle visibility), never one per row.
 */
export const SharedServersRequest = z.object({ userId: Id, otherUserIds: z.array(Id).min(1).max(100) });
export const SharedServersReply = z.object({ sharing: z.array(Id) });
export type SharedServersReply = z.infer<typeof SharedServersReply>;

/**
 * `rpc.guilds.servers.page` and `rpc.guilds.members.page`: every server with its owner, and every
 * membership, in key order a page at a time, for a read-model that starts after the GUILDS stream
 * has dropped its oldest events (auth's, behind the server-owner badge).
 */
const PAGE_LIMIT = z.number().int().min(1).max(1000);
export const ServersPageRequest = z.object({ after: Id.optional(), limit: PAGE_LIMIT });
export const ServersPageReply = z.object({ servers: z.array(z.object({ id: Id, ownerId: Id })) });
export type ServersPageReply = z.infer<typeof ServersPageReply>;
export const Membership = z.object({ serverId: Id, userId: Id });
export type Membership = z.infer<typeof Membership>;
export const MembersPageRequest = z.object({ after: Membership.optional(), limit: PAGE_LIMIT });
export const MembersPageReply = z.object({ members: z.array(Membership) });
export type MembersPageReply = z.infer<typeof MembersPageReply>;
/** Every role's name (social's read-model of role names, for the excerpts of edited messages). */
export const RolesPageRequest = z.object({ after: Id.optional(), limit: PAGE_LIMIT });
export const RolesPageReply = z.object({ roles: z.array(z.object({ id: Id, name: z.string() })) });
export type RolesPageReply = z.infer<typeof RolesPageReply>;

export const GUILDS_RPC = {
  memberCheck: 'rpc.guilds.member.check',
  sharedServers: 'rpc.guilds.members.shared',
  channelPermissions: 'rpc.guilds.channel.permissions',
  channelGet: 'rpc.guilds.channel.get',
  serversPage: 'rpc.guilds.servers.page',
  membersPage: 'rpc.guilds.members.page',
  rolesPage: 'rpc.guilds.roles.page',
} as const;

export const MemberCheckRpc = defineRpc(GUILDS_RPC.memberCheck, MemberCheckRequest, MemberCheckReply);
export const SharedServersRpc = defineRpc(GUILDS_RPC.sharedServers, SharedServersRequest, SharedServersReply);
export const ChannelPermissionsRpc = defineRpc(GUILDS_RPC.channelPermissions, ChannelPermissionsRequest, ChannelPermissionsReply);
export const ChannelGetRpc = defineRpc(GUILDS_RPC.channelGet, ChannelGetRequest, ChannelGetReply);
export const ServersPageRpc = defineRpc(GUILDS_RPC.serversPage, ServersPageRequest, ServersPageReply);
export const MembersPageRpc = defineRpc(GUILDS_RPC.membersPage, MembersPageRequest, MembersPageReply);
export const RolesPageRpc = defineRpc(GUILDS_RPC.rolesPage, RolesPageRequest, RolesPageReply);
