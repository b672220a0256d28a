import { Permission, REALTIME_SUBJECTS } from '@chat/contracts';
import { publishEphemeralEvent } from '@chat/kit';
import { requirePermission } from './access.ts';
import type { Ctx, Domain } from './context.ts';
import { textChannelAccess } from './messages.ts';

/** TYPING_START for the others in the channel: needs SEND_MESSAGES there; nothing is stored. */
export async function startTyping(d: Domain, ctx: Ctx, channelId: string): Promise<void> {
  const access = await textChannelAccess(d.pool, channelId, ctx.userId);
  requirePermission(access.channelPermissions, Permission.SEND_MESSAGES, 'SEND_MESSAGES');
  const data = { channelId, serverId: access.channel.serverId, userId: ctx.userId, timestamp: new Date().toISOString() };
  await publishEphemeralEvent(d.bus, REALTIME_SUBJECTS.channelTyping, data, ctx.requestId);
}
