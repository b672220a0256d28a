import {
  AckableRpc,
  ChannelGetRpc,
  ChannelPermissionsRpc,
  ChannelViewersRpc,
  MemberCheckRpc,
  MembersPageRpc,
  RolesPageRpc,
  ServerChannelsAmongRpc,
  ServerMembersRpc,
  ServersPageRpc,
  SharedServersRpc,
  UserComembersRpc,
  UserServersRpc,
  VisibleChannelsRpc,
  VoiceAccessRpc,
} from '@chat/contracts';
import { type Bus, type Logger, serveRpc } from '@chat/kit';
import { viewableAmong } from '../domain/access.ts';
import { channelViewers, comembersOf, serverMembers, serversOfUser } from '../domain/audience.ts';
import type { Domain } from '../domain/context.ts';
import {
  ackableAt,
  channelPermissionsOf,
  channelRecord,
  memberCheck,
  membersPage,
  rolesPage,
  serverChannelsAmong,
  serversPage,
  sharedServers,
  voiceAccessOf,
} from '../domain/questions.ts';

/** The questions other services ask guilds; each answer is parsed by its contract before it leaves. */
export function serveGuildsRpc(bus: Bus, log: Logger, d: Domain): void {
  serveRpc(bus, log, MemberCheckRpc, ({ serverId, userId }) => memberCheck(d, serverId, userId));
  serveRpc(bus, log, SharedServersRpc, ({ userId, otherUserIds }) => sharedServers(d, userId, otherUserIds));
  serveRpc(bus, log, ChannelPermissionsRpc, ({ channelId, userId }) => channelPermissionsOf(d, channelId, userId));
  serveRpc(bus, log, ChannelGetRpc, ({ channelId }) => channelRecord(d, channelId));
  // Social's channel ack and notification settings: the channel and its message, the server's channels.
  serveRpc(bus, log, AckableRpc, ({ userId, channelId, messageId }) => ackableAt(d, userId, channelId, messageId));
  serveRpc(bus, log, ServerChannelsAmongRpc, ({ serverId, channelIds }) => serverChannelsAmong(d, serverId, channelIds));
  serveRpc(bus, log, VoiceAccessRpc, ({ channelId, userId }) => voiceAccessOf(d, channelId, userId));
  // Auth's read-model of servers and members, when it starts after GUILDS dropped its oldest events.
  serveRpc(bus, log, ServersPageRpc, ({ after, limit }) => serversPage(d, after, limit));
  serveRpc(bus, log, MembersPageRpc, ({ after, limit }) => membersPage(d, after, limit));
  // Social's read-model of role names, when it starts after GUILDS dropped the role events.
  serveRpc(bus, log, RolesPageRpc, ({ after, limit }) => rolesPage(d, after, limit));
}

/** What the gateway's socket asks to decide who receives an event; the same permission function as REST. */
export function serveAudienceRpc(bus: Bus, log: Logger, d: Pick<Domain, 'pool'>): void {
  serveRpc(bus, log, ChannelViewersRpc, ({ channelId }) => channelViewers(d.pool, channelId));
  serveRpc(bus, log, ServerMembersRpc, async ({ serverId, permission }) => ({
    userIds: await serverMembers(d.pool, serverId, permission),
  }));
  serveRpc(bus, log, UserServersRpc, ({ userId }) => serversOfUser(d.pool, userId));
  serveRpc(bus, log, UserComembersRpc, ({ userId }) => comembersOf(d.pool, userId));
  // Social's read states: which of a user's channels stay in the list, and whether an ack is allowed.
  serveRpc(bus, log, VisibleChannelsRpc, async ({ userId, channelIds }) => ({
    channelIds: await viewableAmong(d.pool, userId, channelIds),
  }));
}
