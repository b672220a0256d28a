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
