import { maybeOne, type Queryable } from '@chat/kit';

/** The users read-model (kept by @chat/messaging's consumer of auth's events). */

export async function userExists(db: Queryable, id: string): Promise<boolean> {
  return Boolean(await maybeOne(db, 'SELECT 1 FROM users WHERE id = $1', [id]));
}
