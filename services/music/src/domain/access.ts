import type { PlayerTarget, VoiceAccessReply } from '@chat/contracts';
import { badRequest, forbidden, notFound } from '@chat/kit';

/**
 * May the user see this channel's player? Members of its server only (404 otherwise, so a
 * private server's channels are not revealed), and only voice channels have one.
 */
export function assertCanListen(access: VoiceAccessReply): void {
  if (!access.isMember) throw notFound('Channel');
  if (access.channel.channelType !== 'voice') throw badRequest('Music plays only in voice channels');
}

/**
 * May the user control this channel's player? A member who is in the voice channel; in a
 * musicLocked channel, only its owner, a member who may manage the channel, or a DJ (a member with
 * one of the server's djRoleIds). The serverId the
 * client sent, when it sent one, must be the channel's own (404 otherwise: that server has no such
 * channel).
 */
export function assertCanControl(access: VoiceAccessReply, userId: string, target: Partial<PlayerTarget>): void {
  if (target.serverId !== undefined && access.channel.serverId !== target.serverId) throw notFound('Channel');
  assertCanListen(access);
  if (!access.inChannel) throw forbidden('Join the voice channel to control its music');
  const { musicLocked, ownerId } = access.channel;
  if (musicLocked && ownerId !== userId && !access.canManageChannel && !access.isDj) {
    throw forbidden('Music is locked in this channel: only its owner, members who may manage channels and DJs control it');
  }
}
