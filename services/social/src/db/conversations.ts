import type { UserSummary } from '@chat/contracts';
import { type KeyPage, keysetPage, many, maybeOne, one, prepared, type Queryable } from '@chat/kit';
import { NOT_FROM_BLOCKED, pairKey } from './relationships.ts';
import { joinUserByKey, toUserSummary } from './users.ts';

/** Conversations and their participants. */

/** What a participant's request needs to know of its conversation. */
export type ConversationAccess = {
  id: string;
  isGroup: boolean;
  ownerId: string | null;
  participantIds: string[];
  /** A 1:1 conversation whose two people blocked one another (either way). */
  blocked: boolean;
  /** Who the caller's messages and reactions reach: the participants minus those who blocked the caller. */
  audienceIds: string[];
};

type AccessRow = {
  id: string;
  is_group: boolean;
  owner_id: string | null;
  participant_ids: string[];
  blocked: boolean;
  blocked_by: string[];
};

const ACCESS_SQL = `
  SELECT c.id, c.is_group, c.owner_id,
    ARRAY(SELECT user_id FROM conversation_participants WHERE conversation_id = c.id ORDER BY user_id) AS participant_ids,
    (NOT c.is_group AND EXISTS (
      SELECT 1 FROM conversation_participants o JOIN blocks b
        ON (b.blocker_id = $2 AND b.blocked_id = o.user_id) OR (b.blocker_id = o.user_id AND b.blocked_id = $2)
      WHERE o.conversation_id = c.id AND o.user_id <> $2)) AS blocked,
    ARRAY(SELECT b.blocker_id FROM conversation_participants o JOIN blocks b ON b.blocker_id = o.user_id AND b.blocked_id = $2
      WHERE o.conversation_id = c.id) AS blocked_by
  FROM conversations c
  JOIN conversation_participants me ON me.conversation_id = c.id AND me.user_id = $2
  WHERE c.id = $1`;
// Before every read and write of a conversation: prepared.
const ACCESS = prepared(ACCESS_SQL);
const LOCK = prepared('SELECT 1 FROM conversations WHERE id = $1 FOR NO KEY UPDATE');

/**
 * The conversation when `userId` takes part in it. `lock` holds the conversation row until the
 * transaction ends, so that changes of its participants and calls take turns (posts do not take it:
 * see post_direct_message). The lock is taken before the read, in a statement of its own: a
 * statement that waits for a lock still answers what its snapshot saw before the wait, so a block
 * committed by the holder (blockUser) would go unseen by a ring queued behind it.
 */
export async function conversationForParticipant(
  db: Queryable,
  conversationId: string,
  userId: string,
  options: { lock?: boolean } = {},
): Promise<ConversationAccess | undefined> {
  if (options.lock) await maybeOne(db, LOCK, [conversationId]);
  const row = await maybeOne<AccessRow>(db, ACCESS, [conversationId, userId]);
  return (
    row && {
      id: row.id,
      isGroup: row.is_group,
      ownerId: row.owner_id,
      participantIds: row.participant_ids,
      blocked: row.blocked,
      audienceIds: row.participant_ids.filter((id) => !row.blocked_by.includes(id)),
    }
  );
}

/**
 * The conversation whoever asks, under its row lock (taken again harmlessly when already held): what
 * the platform needs to write a message of its own there (a call's), whoever is still in it.
 */
export async function lockConversation(tx: Queryable, conversationId: string): Promise<Pick<ConversationAccess, 'id' | 'participantIds'>> {
  // The lock first, as in conversationForParticipant: read after it, the participants are current.
  await maybeOne(tx, LOCK, [conversationId]);
  const row = await one<{ participant_ids: string[] }>(
    tx,
    `SELECT ARRAY(SELECT user_id FROM conversation_participants WHERE conversation_id = c.id ORDER BY user_id) AS participant_ids
     FROM conversations c WHERE c.id = $1`,
    [conversationId],
    'Conversation',
  );
  return { id: conversationId, participantIds: row.participant_ids };
}

/** Creates the 1:1 conversation of a pair, or finds it when it exists (also when created concurrently). */
export async function insertPairConversation(tx: Queryable, id: string, a: string, b: string): Promise<{ id: string; created: boolean }> {
  const inserted = await maybeOne<{ id: string }>(
    tx,
    `INSERT INTO conversations (id, is_group, pair_key) VALUES ($1, false, $2) ON CONFLICT (pair_key) DO NOTHING RETURNING id`,
    [id, pairKey(a, b)],
  );
  if (inserted) {
    await insertParticipants(tx, id, [a, b]);
    return { id, created: true };
  }
  // The other transaction committed (ON CONFLICT waited for it), so this statement sees its row.
  const existing = await pairConversationId(tx, a, b);
  if (!existing) throw new Error('pair conversation vanished after a conflict');
  return { id: existing, created: false };
}

/** The 1:1 conversation of a pair, if they have one. */
export async function pairConversationId(db: Queryable, a: string, b: string): Promise<string | undefined> {
  return (await maybeOne<{ id: string }>(db, 'SELECT id FROM conversations WHERE pair_key = $1', [pairKey(a, b)]))?.id;
}

export async function insertGroupConversation(tx: Queryable, id: string, ownerId: string, userIds: string[]): Promise<void> {
  await tx.query('INSERT INTO conversations (id, is_group, owner_id) VALUES ($1, true, $2)', [id, ownerId]);
  await insertParticipants(tx, id, userIds);
}

async function insertParticipants(tx: Queryable, conversationId: string, userIds: string[]): Promise<void> {
  await tx.query('INSERT INTO conversation_participants (conversation_id, user_id) SELECT $1, unnest($2::uuid[])', [
    conversationId,
    userIds,
  ]);
}

/** The group's participants, locked, in the order they joined (the owner's successor first after the owner). */
export async function lockGroupParticipants(tx: Queryable, conversationId: string): Promise<string[]> {
  const rows = await many<{ user_id: string }>(
    tx,
    'SELECT user_id FROM conversation_participants WHERE conversation_id = $1 ORDER BY joined_at, user_id FOR UPDATE',
    [conversationId],
  );
  return rows.map((r) => r.user_id);
}

export async function deleteParticipant(tx: Queryable, conversationId: string, userId: string): Promise<void> {
  await tx.query('DELETE FROM conversation_participants WHERE conversation_id = $1 AND user_id = $2', [conversationId, userId]);
}

export async function setOwner(tx: Queryable, conversationId: string, ownerId: string): Promise<void> {
  await tx.query('UPDATE conversations SET owner_id = $2 WHERE id = $1', [conversationId, ownerId]);
}

/** Removes the conversation with its messages and reactions (cascade). */
export async function deleteConversation(tx: Queryable, conversationId: string): Promise<void> {
  await tx.query('DELETE FROM conversations WHERE id = $1', [conversationId]);
}

export type ConversationView = {
  id: string;
  type: 'direct' | 'group';
  ownerId: string | null;
  participants: UserSummary[];
  /** The newest message still there that the caller sees (the latest may have been deleted, or be from someone they blocked). */
  lastMessageId: string | null;
  lastActivityAt: string;
  createdAt: string;
};

type ParticipantJson = { id: string; username: string | null; display_name: string | null; avatar_url: string | null };
type ViewRow = {
  id: string;
  is_group: boolean;
  owner_id: string | null;
  participants: ParticipantJson[];
  newest_message_id: string | null;
  last_activity_at: string;
  created_at: string;
};

/**
 * The statement of one page of the caller's conversations ($1), or of the one `onlyId`; each
 * participant's user is looked up by its key (without, a plan hashed every user once per
 * conversation listed).
 */
export function conversationsQuery(userId: string, which: { onlyId: string } | KeyPage) {
  const onlyId = 'onlyId' in which ? which.onlyId : null;
  const k = keysetPage('c.id', 'onlyId' in which ? { limit: 1 } : which, 3);
  // A post no longer writes the conversation row (post_direct_message), so the column keeps the
  // conversation's creation: its last activity is its newest message's. Both come from the newest
  // message the caller sees: a blocker must not learn from the time, nor from a place in a list
  // sorted by it, that the person they blocked posted in a group they share.
  const text = `SELECT c.id, c.is_group, c.owner_id, c.created_at,
       GREATEST(c.last_activity_at, newest.created_at) AS last_activity_at,
       (SELECT json_agg(json_build_object('id', p.user_id, 'username', u.username, 'display_name', u.display_name,
                                          'avatar_url', u.avatar_url) ORDER BY p.joined_at, p.user_id)
        FROM conversation_participants p
        ${joinUserByKey('p.user_id')}
        WHERE p.conversation_id = c.id) AS participants,
       newest.id AS newest_message_id
     FROM conversation_participants me JOIN conversations c ON c.id = me.conversation_id
     LEFT JOIN LATERAL (SELECT m.id, m.created_at FROM direct_messages m WHERE m.conversation_id = c.id AND ${NOT_FROM_BLOCKED('m', '$1')}
       ORDER BY m.id DESC LIMIT 1) newest ON true
     WHERE me.user_id = $1 AND ${onlyId === null ? '$2::uuid IS NULL' : 'c.id = $2'} AND ${k.where} ${k.orderLimit}`;
  return { text, params: [userId, onlyId, ...k.params], finish: k.finish };
}

/** One page of the caller's conversations by id, or the one `onlyId`. */
export async function conversationsOf(db: Queryable, userId: string, which: { onlyId: string } | KeyPage): Promise<ConversationView[]> {
  const query = conversationsQuery(userId, which);
  // Prepared: the list and a single conversation are statements of their own, each with its plan.
  const rows = query.finish(await many<ViewRow>(db, prepared(query.text), query.params));
  return rows.map((row) => ({
    id: row.id,
    type: row.is_group ? 'group' : 'direct',
    ownerId: row.owner_id,
    participants: row.participants.map((p) => toUserSummary(p.id, p)),
    lastMessageId: row.newest_message_id,
    lastActivityAt: row.last_activity_at,
    createdAt: row.created_at,
  }));
}
