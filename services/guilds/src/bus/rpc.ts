import { ChannelGetRpc, ChannelPermissionsRpc, MemberCheckRpc, SharedServersRpc, VoiceAccessRpc } from '@chat/contracts';
import { type Bus, type Logger, serveRpc } from '@chat/kit';
import type { Domain } from '../domain/context.ts';
import { channelPermissionsOf, channelRecord, memberCheck, sharedServers, voiceAccessOf } from '../domain/questions.ts';

/** The questions other services ask guilds; each answer is parsed by its contract before it leaves. */
export function serveGuildsRpc(bus: Bus, log: Logger, d: Domain): void {
  serveRpc(bus, log, MemberCheckRpc, ({ serverId, userId }) => memberCheck(d, serverId, userId));
  serveRpc(bus, log, SharedServersRpc, ({ userId, otherUserIds }) => sharedServers(d, userId, otherUserIds));
  serveRpc(bus, log, ChannelPermissionsRpc, ({ channelId, userId }) => channelPermissionsOf(d, channelId, userId));
  serveRpc(bus, log, ChannelGetRpc, ({ channelId }) => channelRecord(d, channelId));
  serveRpc(bus, log, VoiceAccessRpc, ({ channelId, userId }) => voiceAccessOf(d, channelId, userId));
}
