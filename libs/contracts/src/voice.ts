import { z } from 'zod';
import { Id } from './common.ts';

/** Schemas of the voice area (guilds): request bodies, events and RPC messages. */

/**
 * `rpc.guilds.voice.access`: may this user control things in this voice channel? Music asks it
 * before every control. Answers 404 for an unknown channel or one the user cannot see.
 */
export const VoiceAccessRequest = z.object({ channelId: Id, userId: Id });
export const VoiceAccessReply = z.object({
  channel: z.object({
    id: Id,
    serverId: Id,
    channelType: z.enum(['text', 'voice']),
    ownerId: Id.nullable(),
    musicLocked: z.boolean(),
  }),
  isMember: z.boolean(),
  /** The user's voice state is in this channel now. */
  inChannel: z.boolean(),
  /** MANAGE_CHANNELS in this channel (owners and administrators included). */
  canManageChannel: z.boolean(),
});
export type VoiceAccessReply = z.infer<typeof VoiceAccessReply>;

export const VOICE_RPC = { access: 'rpc.guilds.voice.access' } as const;
