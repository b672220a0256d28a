import type { Reactions as ReactionsSchema } from '@chat/contracts';
import { badRequest, exec, exists, many, one, prepared, type Queryable } from '@chat/kit';
import type { z } from 'zod';

/** `{emoji: {count, me}}` of one message, `me` as one viewer sees it. */
export type Reactions = z.infer<typeof ReactionsSchema>;

/** Discord's limit: a message carries at most this many distinct emoji. */
export const MAX_REACTIONS_PER_MESSAGE = 20;

/** The reactions of one kind of message, kept in `table` (message_id, emoji, user_id, created_at). */
export interface ReactionStore {
  /** Each message's reactions as `viewerId` sees them, emoji in order of first use (messages without any are absent). */
  of(db: Queryable, messageIds: string[], viewerId: string): Promise<Map<string, Reactions>>;
  /**
   * Adds the caller's reaction; answers whether it is new (adding twice changes nothing). A new
   * emoji (one nobody has put on the message) is a 400 on a message that already carries
   * MAX_REACTIONS_PER_MESSAGE distinct ones, and must pass `mayAddNew` first (a permission, which
   * throws). Both are decided under the message's lock, in the transaction that inserts.
   */
  add(tx: Queryable, messageId: string, emoji: string, userId: string, mayAddNew?: () => void): Promise<boolean>;
  /** Takes the caller's reaction back; answers whether there was one. */
  remove(tx: Queryable, messageId: string, emoji: string, userId: string): Promise<boolean>;
}

const LOCK_MESSAGE = prepared(`SELECT pg_advisory_xact_lock(hashtextextended('reactions:' || $1, 0))`);

/** The reaction queries over `table`: a constant of the service's own schema, never input. */
export function reactionStore(table: string): ReactionStore {
  // Beside every page of messages: prepared.
  const reactionsOfMessages = prepared(`SELECT message_id, emoji, count(*)::int AS count, bool_or(user_id = $2) AS me
     FROM ${table} WHERE message_id = ANY($1::uuid[])
     GROUP BY message_id, emoji ORDER BY min(created_at), emoji`);

  const isOnMessage = (db: Queryable, messageId: string, emoji: string) =>
    exists(db, `SELECT 1 FROM ${table} WHERE message_id = $1 AND emoji = $2`, [messageId, emoji]);
  const distinctEmoji = prepared(`SELECT count(DISTINCT emoji)::int AS n FROM ${table} WHERE message_id = $1`);
  const insertReaction = prepared(`INSERT INTO ${table} (message_id, emoji, user_id) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`);

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

    async add(tx, messageId, emoji, userId, mayAddNew) {
      // Every add of the message takes its turn, held to the commit, before its check: each one
      // then counts the emoji of those before it. Removals take no turn: they only lower the count,
      // and an emoji an add found on the message stays there, by the add's own insert.
      await exec(tx, LOCK_MESSAGE, [messageId]);
      if (!(await isOnMessage(tx, messageId, emoji))) {
        mayAddNew?.();
        const { n } = await one<{ n: number }>(tx, distinctEmoji, [messageId]);
        if (n >= MAX_REACTIONS_PER_MESSAGE) throw badRequest(`Maximum number of reactions reached (${MAX_REACTIONS_PER_MESSAGE})`);
      }
      return (await exec(tx, insertReaction, [messageId, emoji, userId])) > 0;
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
