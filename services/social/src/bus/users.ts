import { AUTH_SUBJECTS, STREAMS, UserEventData } from '@chat/contracts';
import {
  type Bus,
  type ConsumerHandle,
  consumeEvents,
  type DurableConsumerSpec,
  type EventEnvelope,
  type Pool,
  type Queryable,
} from '@chat/kit';
import type { Logger } from 'pino';
import { upsertUser } from '../db/users.ts';

/** Social's read-model of users: auth's registrations and profile changes, applied once each. */

export const USERS_CONSUMER: DurableConsumerSpec = { stream: STREAMS.auth.name, durable: 'social-users', filter: 'auth.user.*' };

const APPLIED: ReadonlySet<string> = new Set([AUTH_SUBJECTS.userRegistered, AUTH_SUBJECTS.userUpdated]);

export type UserEventHandler = (event: EventEnvelope, tx: Queryable) => Promise<void>;

/** Builds the handler; a payload that breaks the contract is logged and skipped, never retried forever. */
export function userEventHandler(log: Logger): UserEventHandler {
  return async (event, tx) => {
    if (!APPLIED.has(event.subject)) return;
    const parsed = UserEventData.safeParse(event.data);
    if (!parsed.success) {
      log.error({ eventId: event.id, subject: event.subject, issue: parsed.error.issues[0] }, 'user event breaks its contract; skipped');
      return;
    }
    await upsertUser(tx, parsed.data, event.occurredAt);
  };
}

/**
 * Follows auth's stream from its start (a fresh database catches up on every user). Creating the
 * stream here is idempotent and lets social start before auth.
 */
export async function startUserReadModel(
  deps: { bus: Bus; pool: Pool; log: Logger },
  handle: UserEventHandler = userEventHandler(deps.log),
): Promise<ConsumerHandle> {
  return consumeEvents({ bus: deps.bus, pool: deps.pool, log: deps.log, spec: USERS_CONSUMER, stream: STREAMS.auth, handle });
}
