import type { Bus, ConsumerHandle, Logger, Pool } from '@chat/kit';
import { startUserReadModel, usersConsumerSpec } from '@chat/messaging';

/** Guilds' read-model of users (message authors, names on bans and members), from auth's events. */
export function consumeUserEvents(deps: { bus: Bus; pool: Pool; log: Logger }): Promise<ConsumerHandle> {
  return startUserReadModel(deps, usersConsumerSpec('guilds-users'));
}
