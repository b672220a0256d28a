import { CALL_SUBJECTS, type CallEvent, STREAMS } from '@chat/contracts';
import { type Bus, type ConsumerHandle, consumeEvents, type Logger, type MediaRooms, type Pool } from '@chat/kit';
import { syncCallMedia } from '../domain/calls.ts';

/**
 * Keeps the media server's call rooms in line with the calls: a grant only lets its holder connect,
 * and once connected they stay. Whoever leaves a call (hanging up, leaving the group, blocking the
 * other) is disconnected from its room, and an ended call's room closes. A new call needs nothing:
 * its caller connects with the grant the start answered.
 */
export function consumeCallMedia(options: { bus: Bus; pool: Pool; log: Logger; rooms: MediaRooms }): Promise<ConsumerHandle> {
  return consumeEvents({
    ...options,
    spec: { stream: STREAMS.social.name, durable: 'social-call-media', filter: 'social.call.*' },
    relevant: (event) => event.subject !== CALL_SUBJECTS.created,
    // The media server is asked inside the transaction, under the call's row lock (see syncCallMedia).
    handle: (event, tx) => syncCallMedia(options.rooms, tx, (event.data as CallEvent).call.id),
  });
}
