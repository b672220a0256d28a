import type { UserEventData } from '@chat/contracts';
import { exec, maybeOne, type Queryable } from '@chat/kit';

/** Applies auth's view of a user; an event older than the one applied last changes nothing. */
export function upsertUser(db: Queryable, user: UserEventData, occurredAt: string): Promise<number> {
  return exec(
    db,
    `INSERT INTO users (id, username, display_name, avatar_url, badges, version) VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (id) DO UPDATE SET username = EXCLUDED.username, display_name = EXCLUDED.display_name,
       avatar_url = EXCLUDED.avatar_url, badges = EXCLUDED.badges, version = EXCLUDED.version
     WHERE users.version <= EXCLUDED.version`,
    [user.id, user.username, user.displayName, user.avatarUrl, user.badges, occurredAt],
  );
}

export async function userExists(db: Queryable, id: string): Promise<boolean> {
  return Boolean(await maybeOne(db, 'SELECT 1 FROM users WHERE id = $1', [id]));
}
