import {
  ChannelGetRequest,
  type ChannelPermissionsReply,
  ChannelPermissionsRequest,
  ChannelViewersRequest,
  GUILDS_RPC,
  type MemberCheckReply,
  MemberCheckRequest,
  Permission,
  REALTIME_RPC,
  ServerMembersRequest,
  type SharedServersReply,
  SharedServersRequest,
  toMask,
  UserComembersRequest,
  UserServersRequest,
  VOICE_RPC,
  type VoiceAccessReply,
  VoiceAccessRequest,
} from '@chat/contracts';
import { type Bus, type Logger, notFound, serveRpc } from '@chat/kit';
import { listComemberIds, listServerIdsOfUser } from '../db/audience.ts';
import { findChannel } from '../db/channels.ts';
import { usersSharingAServer } from '../db/members.ts';
import { loadChannelAccess, loadServerAccess } from '../domain/access.ts';
import { channelViewers, serverMembers } from '../domain/audience.ts';
import type { Domain } from '../domain/context.ts';
import { has } from '../domain/permissions.ts';
import { isConnectedTo } from '../domain/voice.ts';
import type { Channel } from '../records.ts';

/** The questions other services ask guilds; every answer comes from the same access module as HTTP. */
export function serveGuildsRpc(bus: Bus, log: Logger, d: Domain): void {
  serveRpc(bus, log, GUILDS_RPC.memberCheck, MemberCheckRequest, async ({ serverId, userId }): Promise<MemberCheckReply> => {
    const access = await loadServerAccess(d.pool, serverId, userId);
    if (!access) throw notFound('Server');
    return { isMember: access.isMember, isOwner: access.isOwner };
  });

  serveRpc(bus, log, GUILDS_RPC.sharedServers, SharedServersRequest, async ({ userId, otherUserIds }): Promise<SharedServersReply> => {
    return { sharing: await usersSharingAServer(d.pool, userId, otherUserIds) };
  });

  serveRpc(
    bus,
    log,
    GUILDS_RPC.channelPermissions,
    ChannelPermissionsRequest,
    async ({ channelId, userId }): Promise<ChannelPermissionsReply> => {
      const access = await loadChannelAccess(d.pool, channelId, userId);
      if (!access) throw notFound('Channel');
      return { channelId, serverId: access.channel.serverId, isMember: access.isMember, permissions: toMask(access.channelPermissions) };
    },
  );

  serveRpc(bus, log, GUILDS_RPC.channelGet, ChannelGetRequest, async ({ channelId }): Promise<Channel> => {
    const channel = await findChannel(d.pool, channelId);
    if (!channel) throw notFound('Channel');
    return channel;
  });

  serveRpc(bus, log, VOICE_RPC.access, VoiceAccessRequest, async ({ channelId, userId }): Promise<VoiceAccessReply> => {
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
  });
}

/** What the gateway's socket asks to decide who receives an event; the same permission function as REST. */
export function serveAudienceRpc(bus: Bus, log: Logger, d: Pick<Domain, 'pool'>): void {
  serveRpc(bus, log, REALTIME_RPC.channelViewers, ChannelViewersRequest, ({ channelId }) => channelViewers(d.pool, channelId));
  serveRpc(bus, log, REALTIME_RPC.serverMembers, ServerMembersRequest, async ({ serverId, permission }) => ({
    userIds: await serverMembers(d.pool, serverId, permission),
  }));
  serveRpc(bus, log, REALTIME_RPC.userServers, UserServersRequest, async ({ userId }) => ({
    serverIds: await listServerIdsOfUser(d.pool, userId),
  }));
  serveRpc(bus, log, REALTIME_RPC.userComembers, UserComembersRequest, async ({ userId }) => ({
    userIds: await listComemberIds(d.pool, userId),
  }));
}
