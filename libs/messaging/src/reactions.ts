import type { Reactions as ReactionsSchema } from '@chat/contracts';
import { badRequest, exec, many, maybeOne, one, prepared, type Queryable } from '@chat/kit';
import type { z } from 'zod';

/** `{emoji: {count, me}}` of one message, `me` as one viewer sees it. */
export type Reactions = z.infer<typeof ReactionsSchema>;

/** Discord's limit: a message carries at most this many distinct emoji. */
export const MAX_REACTIONS_PER_MESSAGE = 20;

/** The reactions of one kind of message, kept in `table` (message_id, emoji, user_id, created_at). */
export interface ReactionStore {
  /** Each message's reactions as `viewerId` sees them, emoji in order of first use (messages without any are absent). */
  of(db: Queryable, messageIds: string[], viewerId: string): Promise<Map<string, Reactions>>;
  /** Whether anyone has put `emoji` on the message. */
  isOnMessage(db: Queryable, messageId: string, emoji: string): Promise<boolean>;
  /**
   * Adds the caller's reaction; answers whether it is new (adding twice changes nothing). A new
   * emoji on a message that already carries MAX_REACTIONS_PER_MESSAGE distinct ones is a 400.
   */
  add(tx: Queryable, messageId: string, emoji: string, userId: string): Promise<boolean>;
  /** Takes the caller's reaction back; answers whether there was one. */
  remove(tx: Queryable, messageId: string, emoji: string, userId: string): Promise<boolean>;
}

/** The reaction queries over `table`: a constant of the service's own schema, never input. */
export function reactionStore(table: string): ReactionStore {
  const isOnMessage = async (db: Queryable, messageId: string, emoji: string) =>
    Boolean(await maybeOne(db, `SELECT 1 FROM ${table} WHERE message_id = $1 AND emoji = $2 LIMIT 1`, [messageId, emoji]));

  // Beside every page of messages: prepared.
  const reactionsOfMessages = prepared(`SELECT message_id, emoji, count(*)::int AS count, bool_or(user_id = $2) AS me
     FROM ${table} WHERE message_id = ANY($1::uuid[])
     GROUP BY message_id, emoji ORDER BY min(created_at), emoji`);

  return {
    async of(db, messageIds, viewerId) {
      const byMessage = new Map<string, Reactions>();
      if (messageIds.length === 0) return byMessage;
      const rows = await many<{ message_id: string; emoji: string; count: number; me: boolean }>(db, reactionsOfMessages, [
        messageIds,
        viewerId,
      ]);
      for (const r of rows) {
        const reactions = byMessage.get(r.message_id) ?? {};
        reactions[r.emoji] = { count: r.count, me: r.me };
        byMessage.set(r.message_id, reactions);
      }
      return byMessage;
    },

    isOnMessage,

    async add(tx, messageId, emoji, userId) {
      if (!(await isOnMessage(tx, messageId, emoji))) {
        // Serialises new emoji on one message, so two at once cannot both be the 21st.
        await exec(tx, `SELECT pg_advisory_xact_lock(hashtextextended('reactions:' || $1, 0))`, [messageId]);
        const { n } = await one<{ n: number }>(tx, `SELECT count(DISTINCT emoji)::int AS n FROM ${table} WHERE message_id = $1`, [
          messageId,
        ]);
        if (n >= MAX_REACTIONS_PER_MESSAGE && !(await isOnMessage(tx, messageId, emoji))) {
          throw badRequest(`Maximum number of reactions reached (${MAX_REACTIONS_PER_MESSAGE})`);
        }
      }
      const added = await exec(tx, `INSERT INTO ${table} (message_id, emoji, user_id) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`, [
        messageId,
        emoji,
        userId,
      ]);
      return added > 0;
    },

    async remove(tx, messageId, emoji, userId) {
      return (await exec(tx, `DELETE FROM ${table} WHERE message_id = $1 AND emoji = $2 AND user_id = $3`, [messageId, emoji, userId])) > 0;
    },
  };
}

/** Adds each message's reactions as `viewerId` sees them (none for an anonymous viewer). */
export async function withReactions<M extends { id: string }>(
  db: Queryable,
  store: ReactionStore,
  messages: M[],
  viewerId: string | null,
): Promise<(M & { reactions: Reactions })[]> {
  const reactions =
    viewerId === null
      ? new Map<string, Reactions>()
      : await store.of(
          db,
          messages.map((m) => m.id),
          viewerId,
        );
  return messages.map((m) => ({ ...m, reactions: reactions.get(m.id) ?? {} }));
}
