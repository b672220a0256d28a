import {
  DISPATCH_NAMES,
  DISPATCH_PAYLOADS,
  type DispatchName,
  PresenceChosenEvent,
  READ_STATE_SUBJECTS,
  REALTIME_SUBJECTS,
  SOCIAL_SUBJECTS,
} from '@chat/contracts';
import type { EventEnvelope } from '@chat/kit';
import type { Logger } from 'pino';
import type { Audience } from './audience.ts';
import type { Presence } from './presence.ts';
import type { SessionStore } from './session-store.ts';

/** The events whose payload carries the record under a field (the rest is who receives it): subject -> field. */
const WRAPPED: Readonly<Record<string, string>> = {
  [SOCIAL_SUBJECTS.dmCreated]: 'message',
  [SOCIAL_SUBJECTS.dmUpdated]: 'message',
  [READ_STATE_SUBJECTS.readStateUpdated]: 'readState',
  [READ_STATE_SUBJECTS.notificationCreated]: 'notification',
};

/**
 * Turns one domain event into dispatches: outdated audiences first, then the payload parsed by its
 * dispatch schema (nothing the contract does not name leaves the gateway), then one numbered
 * dispatch into each recipient's sessions. The event id makes a redelivery change nothing.
 */
export function createDispatcher(deps: { store: SessionStore; audience: Audience; presence: Presence; log: Logger }) {
  /** `publishedAtMs`: the event's time on JetStream, from which the replicas measure the dispatch lag. */
  return async function dispatch(event: EventEnvelope, publishedAtMs?: number): Promise<void> {
    await deps.audience.invalidate(event.subject, event.data);
    if (event.subject === REALTIME_SUBJECTS.presenceUpdated) {
      const chosen = PresenceChosenEvent.parse(event.data);
      await deps.presence.chose(chosen.userId, chosen.status, chosen.customStatus);
      return;
    }
    const name = (DISPATCH_NAMES as Record<string, DispatchName>)[event.subject];
    if (!name) return;
    const field = WRAPPED[event.subject];
    const raw = field ? (event.data as Record<string, unknown>)[field] : event.data;
    const parsed = DISPATCH_PAYLOADS[name].safeParse(raw);
    if (!parsed.success) {
      deps.log.error(
        { eventId: event.id, subject: event.subject, issue: parsed.error.issues[0] },
        'event breaks its contract; not dispatched',
      );
      return;
    }
    const userIds = await deps.audience.recipients(event.subject, event.data);
    await deps.store.deliver(name, JSON.stringify(parsed.data), { userIds }, event.id, publishedAtMs);
  };
}

export type Dispatcher = ReturnType<typeof createDispatcher>;
