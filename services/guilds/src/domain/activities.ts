import type { ActivityUpdatedEvent } from '@chat/contracts';
import type { Queryable } from '@chat/kit';
import { applyActivity } from '../db/activities.ts';

/** Keeps what a user is playing, as social announced it; an older event than the one applied changes nothing. */
export function recordActivity(tx: Queryable, update: ActivityUpdatedEvent, occurredAt: string): Promise<number> {
  return applyActivity(tx, update, occurredAt);
}
