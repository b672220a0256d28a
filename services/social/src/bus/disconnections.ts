import { REALTIME_SUBJECTS, STREAMS, UserDisconnectedEvent } from '@chat/contracts';
import { type Bus, type ConsumerHandle, consumeEvents, type Logger, type Pool } from '@chat/kit';
import { expireActivity } from '../domain/games.ts';

/** Activities end when their user's last socket closes (the gateway tells, once per disconnection). */
export function consumeDisconnections(options: { bus: Bus; pool: Pool; log: Logger }): Promise<ConsumerHandle> {
  return consumeEvents({
    ...options,
    // The gateway creates its stream too; whoever starts first creates it.
    stream: STREAMS.gateway,
    spec: { stream: STREAMS.gateway.name, durable: 'social-disconnections', filter: REALTIME_SUBJECTS.userDisconnected },
    handle: (event, tx) => expireActivity(tx, UserDisconnectedEvent.parse(event.data)),
  });
}
