import type { MemberUser } from '@chat/contracts';
import { exec, many, maybeOne, type Queryable } from '@chat/kit';
import type { z } from 'zod';

type Reactions = Record<string, { count: number; me: boolean }>;

/** The reactions of each message as `viewerId` sees them: `{emoji: {count, me}}`, emoji in order of first use. */
export async function reactionsOf(db: Queryable, messageIds: string[], viewerId: string): Promise<Map<string, Reactions>> {
  const byMessage = new Map<string, Reactions>();
  if (messageIds.length === 0) return byMessage;
  const rows = await many<{ message_id: string; emoji: string; count: number; me: boolean }>(
    db,
    `SELECT message_id, emoji, count(*)::int AS count, bool_or(user_id = $2) AS me
     FROM message_reactions WHERE message_id = ANY($1::uuid[])
     GROUP BY message_id, emoji ORDER BY min(created_at), emoji`,
    [messageIds, viewerId],
  );
  for (const r of rows) {
    const reactions = byMessage.get(r.message_id) ?? {};
    reactions[r.emoji] = { count: r.count, me: r.me };
    byMessage.set(r.message_id, reactions);
  }
  return byMessage;
}

export async function emojiOnMessage(db: Queryable, messageId: string, emoji: string): Promise<boolean> {
  return Boolean(await maybeOne(db, 'SELECT 1 FROM message_reactions WHERE message_id = $1 AND emoji = $2 LIMIT 1', [messageId, emoji]));
}

/** Answers whether the reaction is new (adding it twice changes nothing). */
export async function addReaction(tx: Queryable, messageId: string, emoji: string, userId: string): Promise<boolean> {
  const added = await exec(tx, 'INSERT INTO message_reactions (message_id, emoji, user_id) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING', [
    messageId,
    emoji,
    userId,
  ]);
  return added > 0;
}

export async function removeReaction(tx: Queryable, messageId: string, emoji: string, userId: string): Promise<boolean> {
  return (
    (await exec(tx, 'DELETE FROM message_reactions WHERE message_id = $1 AND emoji = $2 AND user_id = $3', [messageId, emoji, userId])) > 0
  );
}

type User = z.infer<typeof MemberUser>;

/** Who reacted with `emoji`, by user id, with names from the users read-model. */
export async function reactionUsers(
  db: Queryable,
  messageId: string,
  emoji: string,
  page: { limit: number; after?: string | undefined },
): Promise<User[]> {
  const rows = await many<{ id: string; username: string | null; display_name: string | null; avatar_url: string | null }>(
    db,
    `SELECT r.user_id AS id, u.username, u.display_name, u.avatar_url
     FROM message_reactions r LEFT JOIN users u ON u.id = r.user_id
     WHERE r.message_id = $1 AND r.emoji = $2 AND ($3::uuid IS NULL OR r.user_id > $3)
     ORDER BY r.user_id LIMIT $4`,
    [messageId, emoji, page.after ?? null, page.limit],
  );
  // A user whose auth event has not reached us yet still gets readable names.
  return rows.map((r) => ({
    id: r.id,
    username: r.username ?? 'unknown',
    displayName: r.display_name ?? 'Unknown user',
    avatarUrl: r.avatar_url,
  }));
}
