import type { DirectMessageRecord as DirectMessage } from '@chat/contracts';
import { exec, many, type Queryable } from '@chat/kit';

type Reactions = DirectMessage['reactions'];

/** `{emoji: {count, me}}` of each message, as `viewerId` sees them (messages without any are absent). */
export async function reactionsOf(db: Queryable, messageIds: string[], viewerId: string): Promise<Map<string, Reactions>> {
  const byMessage = new Map<string, Reactions>();
  if (messageIds.length === 0) return byMessage;
  const rows = await many<{ message_id: string; emoji: string; count: number; me: boolean }>(
    db,
    `SELECT message_id, emoji, count(*) AS count, bool_or(user_id = $2) AS me
     FROM dm_reactions WHERE message_id = ANY($1::uuid[])
     GROUP BY message_id, emoji ORDER BY message_id, min(created_at)`,
    [messageIds, viewerId],
  );
  for (const row of rows) {
    const reactions = byMessage.get(row.message_id) ?? {};
    reactions[row.emoji] = { count: row.count, me: row.me };
    byMessage.set(row.message_id, reactions);
  }
  return byMessage;
}

/** Answers whether the reaction is new. */
export async function addReaction(tx: Queryable, messageId: string, emoji: string, userId: string): Promise<boolean> {
  const added = await exec(tx, 'INSERT INTO dm_reactions (message_id, emoji, user_id) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING', [
    messageId,
    emoji,
    userId,
  ]);
  return added > 0;
}

/** Answers whether there was such a reaction. */
export async function removeReaction(tx: Queryable, messageId: string, emoji: string, userId: string): Promise<boolean> {
  return (await exec(tx, 'DELETE FROM dm_reactions WHERE message_id = $1 AND emoji = $2 AND user_id = $3', [messageId, emoji, userId])) > 0;
}
