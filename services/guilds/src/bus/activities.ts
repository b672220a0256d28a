import { ACTIVITY_SUBJECTS, ActivityUpdatedEvent, STREAMS } from '@chat/contracts';
import { type Bus, type ConsumerHandle, consumeEvents, type Logger, type Pool } from '@chat/kit';
import { applyActivity } from '../db/activities.ts';

/** Keeps what users are playing (for the member list) from social's events. */
export async function consumeActivityEvents(options: { bus: Bus; pool: Pool; log: Logger }): Promise<ConsumerHandle> {
  return consumeEvents({
    ...options,
    // Social creates its stream too; whoever starts first creates it.
    stream: STREAMS.social,
    spec: { stream: STREAMS.social.name, durable: 'guilds-activities', filter: 'social.activity.*' },
    handle: async (event, tx) => {
      if (event.subject !== ACTIVITY_SUBJECTS.activityUpdated) return;
      const update = ActivityUpdatedEvent.safeParse(event.data);
      if (!update.success) {
        options.log.warn({ eventId: event.id, subject: event.subject }, 'activity event does not match its schema; skipped');
        return;
      }
      await applyActivity(tx, update.data, event.occurredAt);
    },
  });
}
