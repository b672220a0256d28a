import type { VoiceState } from '@chat/contracts';

/** A live voice state, as guilds publishes it with guilds.voice.*: joined now, nobody muted, due in a minute. */
export function liveVoiceState(userId: string, serverId: string, channelId: string): VoiceState {
  return {
    userId,
    serverId,
    channelId,
    selfMute: false,
    selfDeaf: false,
    serverMute: false,
    serverDeaf: false,
    joinedAt: new Date().toISOString(),
    expiresAt: new Date(Date.now() + 60_000).toISOString(),
  };
}
