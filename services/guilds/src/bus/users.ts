import { AUTH_SUBJECTS, STREAMS, UserEventData } from '@chat/contracts';
import { type Bus, type ConsumerHandle, consumeEvents, type Logger, type Pool } from '@chat/kit';
import { upsertUser } from '../db/users.ts';

const USER_SUBJECTS = new Set<string>([AUTH_SUBJECTS.userRegistered, AUTH_SUBJECTS.userUpdated]);

/** Keeps the read-model of users (names and avatars on bans and members) from auth's events. */
export async function consumeUserEvents(options: { bus: Bus; pool: Pool; log: Logger }): Promise<ConsumerHandle> {
  return consumeEvents({
    ...options,
    // Auth creates its stream too; whoever starts first creates it.
    stream: STREAMS.auth,
    spec: { stream: STREAMS.auth.name, durable: 'guilds-users', filter: 'auth.user.*' },
    handle: async (event, tx) => {
      if (!USER_SUBJECTS.has(event.subject)) return;
      const user = UserEventData.safeParse(event.data);
      if (!user.success) {
        options.log.warn({ eventId: event.id, subject: event.subject }, 'user event does not match its schema; skipped');
        return;
      }
      await upsertUser(tx, user.data, event.occurredAt);
    },
  });
}
