import type { ActivityUpdatedEvent } from '@chat/contracts';
import { exec, type Queryable } from '@chat/kit';

/**
 * Applies social's view of a user's activity unless a newer event was applied already; a cleared
 * activity stays as a row without a name, so that its version still guards against late events.
 */
export function applyActivity(db: Queryable, update: ActivityUpdatedEvent, occurredAt: string): Promise<number> {
  const activity = update.activity;
  return exec(
    db,
    `INSERT INTO activities (user_id, game_id, name, started_at, version) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (user_id) DO UPDATE SET game_id = EXCLUDED.game_id, name = EXCLUDED.name,
       started_at = EXCLUDED.started_at, version = EXCLUDED.version
     WHERE activities.version <= EXCLUDED.version`,
    [update.userId, activity?.gameId ?? null, activity?.name ?? null, activity?.startedAt ?? null, occurredAt],
  );
}
