import { many, type Queryable } from '@chat/kit';

/** The conversations the user takes part in (READY's conversationIds). */
export async function conversationIdsOf(db: Queryable, userId: string): Promise<string[]> {
  const rows = await many<{ conversation_id: string }>(
    db,
    'SELECT conversation_id FROM conversation_participants WHERE user_id = $1 ORDER BY conversation_id',
    [userId],
  );
  return rows.map((r) => r.conversation_id);
}

/** The user's friends (who see their presence). */
export async function friendIdsOf(db: Queryable, userId: string): Promise<string[]> {
  const rows = await many<{ friend_id: string }>(db, 'SELECT friend_id FROM friendships WHERE user_id = $1', [userId]);
  return rows.map((r) => r.friend_id);
}

/** Friends and everyone in a conversation with the user (the user excluded). */
export async function contactIdsOf(db: Queryable, userId: string): Promise<string[]> {
  const rows = await many<{ id: string }>(
    db,
    `SELECT friend_id AS id FROM friendships WHERE user_id = $1
     UNION
     SELECT other.user_id FROM conversation_participants mine
       JOIN conversation_participants other ON other.conversation_id = mine.conversation_id AND other.user_id <> mine.user_id
      WHERE mine.user_id = $1`,
    [userId],
  );
  return rows.map((r) => r.id);
}

/** Everyone in a block with the user, whichever way. */
export async function blockedWithIds(db: Queryable, userId: string): Promise<string[]> {
  const rows = await many<{ id: string }>(
    db,
    'SELECT blocked_id AS id FROM blocks WHERE blocker_id = $1 UNION SELECT blocker_id FROM blocks WHERE blocked_id = $1',
    [userId],
  );
  return rows.map((r) => r.id);
}
