import type {
  AckableReply,
  Channel,
  ChannelPermissionsReply,
  MemberCheckReply,
  Membership,
  MembersPageReply,
  RolesPageReply,
  ServersPageReply,
  VoiceAccessReply,
} from '@chat/contracts';
import { Permission, toMask } from '@chat/contracts';
import { notFound } from '@chat/kit';
import { findChannel, findChannels } from '../db/channels.ts';
import { listMemberships, usersSharingAServer } from '../db/members.ts';
import { findMessage } from '../db/messages.ts';
import { listRoleNames } from '../db/roles.ts';
import { listServerOwners } from '../db/servers.ts';
import { loadChannelAccess, loadServerAccess, viewableAmong } from './access.ts';
import type { Domain } from './context.ts';
import { has } from './permissions.ts';
import { isConnectedTo } from './voice.ts';

/** The questions other services ask guilds over the bus; every answer comes from the same access module as HTTP. */

export async function memberCheck(d: Domain, serverId: string, userId: string): Promise<MemberCheckReply> {
  const access = await loadServerAccess(d.pool, serverId, userId);
  if (!access) throw notFound('Server');
  return { isMember: access.isMember, isOwner: access.isOwner };
}

/** Which of `otherUserIds` share a server with `userId`. */
export async function sharedServers(d: Domain, userId: string, otherUserIds: string[]): Promise<{ sharing: string[] }> {
  return { sharing: await usersSharingAServer(d.pool, userId, otherUserIds) };
}

export async function channelPermissionsOf(d: Domain, channelId: string, userId: string): Promise<ChannelPermissionsReply> {
  const access = await loadChannelAccess(d.pool, channelId, userId);
  if (!access) throw notFound('Channel');
  return { channelId, serverId: access.channel.serverId, isMember: access.isMember, permissions: toMask(access.channelPermissions) };
}

export async function channelRecord(d: Domain, channelId: string): Promise<Channel> {
  const channel = await findChannel(d.pool, channelId);
  if (!channel) throw notFound('Channel');
  return channel;
}

/**
 * Whether the user may mark the channel read at this message (social's channel ack): they may view
 * the channel now, by the same function as rpc.guilds.channels.visible, and the message is one of
 * its own, not deleted. A voice channel holds none.
 */
export async function ackableAt(d: Domain, userId: string, channelId: string, messageId: string): Promise<AckableReply> {
  const [visible, message] = await Promise.all([viewableAmong(d.pool, userId, [channelId]), findMessage(d.pool, channelId, messageId)]);
  return { viewable: visible.length > 0, holdsMessage: message !== undefined };
}

/** Which of these ids are channels of this server (social's per-channel notification levels): one query for all. */
export async function serverChannelsAmong(d: Domain, serverId: string, channelIds: string[]): Promise<{ channelIds: string[] }> {
  const channels = await findChannels(d.pool, [...new Set(channelIds)]);
  return { channelIds: channels.filter((c) => c.serverId === serverId).map((c) => c.id) };
}

export async function voiceAccessOf(d: Domain, channelId: string, userId: string): Promise<VoiceAccessReply> {
  const access = await loadChannelAccess(d.pool, channelId, userId);
  if (!access || !has(access.channelPermissions, Permission.VIEW_CHANNEL)) throw notFound('Channel');
  const { id, serverId, channelType, ownerId, musicLocked } = access.channel;
  return {
    channel: { id, serverId, channelType, ownerId, musicLocked },
    isMember: access.isMember,
    inChannel: access.isMember && (await isConnectedTo(d, userId, channelId)),
    canManageChannel: has(access.channelPermissions, Permission.MANAGE_CHANNELS),
    isDj: access.isMember && access.roleIds.some((id) => access.server.dj_role_ids.includes(id)),
  };
}

/** Every server's owner, a page at a time, for auth's read-model behind the server-owner badge. */
export async function serversPage(d: Domain, after: string | undefined, limit: number): Promise<ServersPageReply> {
  return { servers: await listServerOwners(d.pool, after, limit) };
}

/** Every membership, a page at a time, for the same read-model. */
export async function membersPage(d: Domain, after: Membership | undefined, limit: number): Promise<MembersPageReply> {
  return { members: await listMemberships(d.pool, after, limit) };
}

/** Every role's name, a page at a time, for social's read-model of role names. */
export async function rolesPage(d: Domain, after: string | undefined, limit: number): Promise<RolesPageReply> {
  return { roles: await listRoleNames(d.pool, after, limit) };
}
