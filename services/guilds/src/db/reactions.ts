import type { MemberUser } from '@chat/contracts';
import { many, type Queryable } from '@chat/kit';
import { reactionStore } from '@chat/messaging';
import type { z } from 'zod';

/** Reactions on channel messages. */
export const messageReactions = reactionStore('message_reactions');

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
