import { STREAMS, VOICE_SUBJECTS, type VoiceLeftEventData, type VoiceMovedEventData, type VoiceState } from '@chat/contracts';
import { type Bus, type ConsumerHandle, consumeEvents, type Logger, type MediaRooms, type Pool } from '@chat/kit';
import type { z } from 'zod';
import { syncVoiceMedia } from '../domain/voice.ts';

type VoiceEventData = VoiceState | z.output<typeof VoiceLeftEventData> | z.output<typeof VoiceMovedEventData>;

/**
 * Keeps the media server's voice rooms in line with the voice states: whoever a state change took
 * out of a room (a leave, a switch, a move, a moderator's disconnect, a kick or ban, the channel
 * deleted, an expiry) is disconnected from it, and a server mute or deafen (or its end) applies to
 * the connected participant at once, not only to their next grant. A join needs nothing: the
 * joiner connects with the grant it answered.
 */
export function consumeVoiceMedia(options: { bus: Bus; pool: Pool; log: Logger; rooms: MediaRooms }): Promise<ConsumerHandle> {
  return consumeEvents({
    ...options,
    spec: { stream: STREAMS.guilds.name, durable: 'guilds-voice-media', filter: 'guilds.voice.*' },
    relevant: (event) => event.subject !== VOICE_SUBJECTS.joined,
    // The media server is asked inside the transaction, under the user's voice lock (see syncVoiceMedia).
    handle: async (event, tx) => {
      const data = event.data as VoiceEventData;
      const room = 'fromChannelId' in data ? data.fromChannelId : data.channelId;
      await syncVoiceMedia(options.rooms, tx, data.userId, room);
    },
  });
}
