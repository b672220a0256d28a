import type { Bus, ConsumerHandle, Logger, Pool } from '@chat/kit';
import { startUserReadModel as startReadModel, type UserEventHandler, userEventHandler, usersConsumerSpec } from '@chat/messaging';

/** Social's read-model of users (senders of direct messages, friends): auth's events, applied once each. */

export const USERS_CONSUMER = usersConsumerSpec('social-users');

export { type UserEventHandler, userEventHandler };

export function startUserReadModel(deps: { bus: Bus; pool: Pool; log: Logger }, handle?: UserEventHandler): Promise<ConsumerHandle> {
  return startReadModel(deps, USERS_CONSUMER, handle);
}
