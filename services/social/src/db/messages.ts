import type { DirectMessageRecord as DirectMessage, LinkPreview, MessageCall, MessageType } from '@chat/contracts';
import { many, maybeOne, type OutboxRow, one, type Pool, prepared, type Queryable } from '@chat/kit';
import {
  type MessageSource,
  type Page,
  pageOfMessages as pageOf,
  type SearchRequest,
  type SearchResult,
  type StoredFile,
  searchMessages as searchIn,
} from '@chat/messaging';
import { NOT_FROM_BLOCKED } from './relationships.ts';

/** Direct messages, with their sender's name, avatar and badges from the users read-model. */

/** A message as stored; reactions depend on who looks, so they are added per viewer. */
export type StoredMessage = Omit<DirectMessage, 'reactions'>;

type MessageRow = {
  id: string;
  conversation_id: string;
  sender_id: string;
  content: string;
  attachments: Record<string, StoredFile>;
  reply_to_id: string | null;
  type: MessageType;
  embeds: LinkPreview[];
  call_id: string | null;
  call_duration_seconds: number | null;
  edited_at: string | null;
  created_at: string;
  sender_name: string | null;
  sender_avatar: string | null;
  sender_badges: string[] | null;
};

const MESSAGE_COLUMNS = `m.id, m.conversation_id, m.sender_id, m.content, m.attachments, m.reply_to_id, m.type, m.embeds, m.call_id, m.call_duration_seconds,
  m.edited_at, m.created_at,
  u.display_name AS sender_name, u.avatar_url AS sender_avatar, u.badges AS sender_badges`;

function toMessage(row: MessageRow): StoredMessage {
  return {
    id: row.id,
    conversationId: row.conversation_id,
    senderId: row.sender_id,
    content: row.content,
    attachments: row.attachments,
    replyToId: row.reply_to_id,
    editedAt: row.edited_at,
    createdAt: row.created_at,
    // A sender whose auth event has not reached us yet still gets a readable name.
    senderName: row.sender_name ?? 'Unknown user',
    senderAvatar: row.sender_avatar,
    senderBadges: row.sender_badges ?? [],
    type: row.type,
    embeds: row.embeds,
    call: row.call_id === null ? null : { id: row.call_id, durationSeconds: row.call_duration_seconds },
  };
}

const DIRECT_MESSAGES: MessageSource<MessageRow, StoredMessage> = {
  table: 'direct_messages',
  select: `SELECT ${MESSAGE_COLUMNS} FROM direct_messages m LEFT JOIN users u ON u.id = m.sender_id`,
  scope: 'm.conversation_id',
  toMessage,
};

export type NewMessage = {
  /** A fresh UUID v7: the message's id unless the conversation's newest does not sort before it. */
  id: string;
  conversationId: string;
  senderId: string;
  content: string;
  attachments: Record<string, StoredFile>;
  replyToId: string | null;
  type: MessageType;
  createdAt: string;
  /** Call system messages only: the call, and how long it lasted (call_ended). */
  call?: MessageCall;
};

export type PostOutcome =
  | {
      outcome: 'posted';
      id: string;
      sender: { name: string | null; avatar: string | null; badges: string[] | null };
      audienceIds: string[];
    }
  | { outcome: 'not_found' | 'blocked' | 'no_reply' };

type PostRow = {
  outcome: PostOutcome['outcome'];
  id: string | null;
  sender_name: string | null;
  sender_avatar: string | null;
  sender_badges: string[] | null;
  audience_ids: string[] | null;
};

// Named: prepared once per connection, then only bound.
const POST_MESSAGE = {
  name: 'social_post_direct_message',
  text: 'SELECT * FROM post_direct_message($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)',
};

/**
 * Who may write, the message and its event in one statement (post_direct_message): refused, it
 * writes nothing and answers why. The event's envelope is the service's; the statement fills in
 * the id, the sender's fields and the participants the message reaches.
 */
export async function postMessageRow(db: Queryable, m: NewMessage, event: OutboxRow): Promise<PostOutcome> {
  const row = await one<PostRow>(db, POST_MESSAGE, [
    m.id,
    m.conversationId,
    m.senderId,
    m.content,
    m.attachments,
    m.replyToId,
    m.type,
    m.createdAt,
    event.id,
    event.subject,
    event.payload,
    event.headers,
  ]);
  if (row.outcome !== 'posted') return { outcome: row.outcome };
  return {
    outcome: 'posted',
    id: row.id as string,
    sender: { name: row.sender_name, avatar: row.sender_avatar, badges: row.sender_badges },
    audienceIds: row.audience_ids ?? [],
  };
}

/**
 * Makes a page reader wait for the posts of the conversation in flight: they hold this lock shared
 * from before they pick an id until they commit (post_direct_message, same key), so a reader that
 * takes it exclusive before its snapshot sees all of them, and a later post takes an id above
 * everything that reader saw. Cursors then neither skip nor repeat a message.
 */
const LOCK_FOR_READ = prepared(`SELECT pg_advisory_xact_lock(hashtextextended('direct_messages:' || $1, 0))`);

/**
 * A message the platform writes itself (a call's), inside the caller's transaction: numbered under
 * the same lock rule as post_direct_message (the conversation's lock held shared from before the
 * id is picked until commit; each statement sees what committed before it), so paging stays gap-free.
 */
export async function insertMessage(tx: Queryable, message: NewMessage): Promise<StoredMessage> {
  await tx.query(`SELECT pg_advisory_xact_lock_shared(hashtextextended('direct_messages:' || $1, 0))`, [message.conversationId]);
  const row = await one<MessageRow>(
    tx,
    `WITH m AS (
       INSERT INTO direct_messages (id, conversation_id, sender_id, content, attachments, reply_to_id, type, created_at, call_id, call_duration_seconds)
       VALUES (next_message_id((SELECT d.id FROM direct_messages d WHERE d.conversation_id = $2 ORDER BY d.id DESC LIMIT 1), $1),
               $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING *)
     SELECT ${MESSAGE_COLUMNS} FROM m LEFT JOIN users u ON u.id = m.sender_id`,
    [
      message.id,
      message.conversationId,
      message.senderId,
      message.content,
      message.attachments,
      message.replyToId,
      message.type,
      message.createdAt,
      message.call?.id ?? null,
      message.call?.durationSeconds ?? null,
    ],
  );
  return toMessage(row);
}

export async function messageById(db: Queryable, id: string): Promise<StoredMessage | undefined> {
  const row = await maybeOne<MessageRow>(db, `${DIRECT_MESSAGES.select} WHERE m.id = $1`, [id]);
  return row && toMessage(row);
}

const MESSAGES_BY_IDS = prepared(`${DIRECT_MESSAGES.select} WHERE m.id = ANY($1::uuid[])`);

export async function messagesByIds(db: Queryable, ids: string[]): Promise<StoredMessage[]> {
  if (ids.length === 0) return [];
  const rows = await many<MessageRow>(db, MESSAGES_BY_IDS, [ids]);
  return rows.map(toMessage);
}

/**
 * A page of the conversation as `viewerId` sees it (without messages of people they blocked),
 * newest first, read under the conversation's read lock.
 */
export function pageOfMessages(pool: Pool, conversationId: string, viewerId: string, page: Page): Promise<StoredMessage[]> {
  const filter = { where: NOT_FROM_BLOCKED('m', '$4'), params: [viewerId] };
  return pageOf(pool, DIRECT_MESSAGES, conversationId, page, { readLock: LOCK_FOR_READ, filter });
}

/** The messages of these conversations that match, as `viewerId` sees them (as in paging: none from people they blocked). */
export function searchMessages(
  db: Queryable,
  conversationIds: string[],
  viewerId: string,
  search: Pick<SearchRequest, 'text' | 'page'>,
): Promise<SearchResult<StoredMessage>> {
  return searchIn(db, DIRECT_MESSAGES, {
    scope: { only: conversationIds },
    ...search,
    filter: { where: NOT_FROM_BLOCKED('m', '$6'), params: [viewerId] },
  });
}

/** An edit: the new text and the link previews it keeps. */
export async function updateMessageContent(
  tx: Queryable,
  id: string,
  edit: { content: string; embeds: LinkPreview[] },
): Promise<StoredMessage> {
  const row = await one<MessageRow>(
    tx,
    `WITH m AS (UPDATE direct_messages SET content = $2, embeds = $3, edited_at = now() WHERE id = $1 RETURNING *)
     SELECT ${MESSAGE_COLUMNS} FROM m LEFT JOIN users u ON u.id = m.sender_id`,
    [id, edit.content, JSON.stringify(edit.embeds)],
    'Message',
  );
  return toMessage(row);
}

export async function deleteMessageRow(tx: Queryable, id: string): Promise<void> {
  await tx.query('DELETE FROM direct_messages WHERE id = $1', [id]);
}

export type LockedMessage = Pick<StoredMessage, 'id' | 'conversationId' | 'senderId' | 'type' | 'content' | 'embeds'> & {
  attachments: Record<string, StoredFile>;
};

/**
 * The message row, locked until the transaction ends, for a change by its sender (edit, delete) or
 * of its link previews.
 */
export async function lockMessage(tx: Queryable, id: string): Promise<LockedMessage | undefined> {
  const row = await maybeOne<Pick<MessageRow, 'conversation_id' | 'sender_id' | 'type' | 'content' | 'attachments' | 'embeds'>>(
    tx,
    'SELECT conversation_id, sender_id, type, content, attachments, embeds FROM direct_messages WHERE id = $1 FOR UPDATE',
    [id],
  );
  return (
    row && {
      id,
      conversationId: row.conversation_id,
      senderId: row.sender_id,
      type: row.type,
      content: row.content,
      attachments: row.attachments,
      embeds: row.embeds,
    }
  );
}

/**
 * Stores the link previews media resolved for a message of this conversation, and answers it with
 * who its sending reached, as they are now (post_direct_message's rule: the participants, less those
 * who blocked the sender, whether or not the sender is still one); undefined when it is gone.
 */
export async function setMessageEmbeds(
  tx: Queryable,
  conversationId: string,
  id: string,
  embeds: LinkPreview[],
): Promise<{ message: StoredMessage; audienceIds: string[] } | undefined> {
  const row = await maybeOne<MessageRow & { audience_ids: string[] }>(
    tx,
    `WITH m AS (UPDATE direct_messages SET embeds = $3 WHERE id = $1 AND conversation_id = $2 RETURNING *)
     SELECT ${MESSAGE_COLUMNS},
       ARRAY(SELECT o.user_id FROM conversation_participants o
         WHERE o.conversation_id = m.conversation_id
           AND NOT EXISTS (SELECT 1 FROM blocks b WHERE b.blocker_id = o.user_id AND b.blocked_id = m.sender_id)
         ORDER BY o.user_id) AS audience_ids
     FROM m LEFT JOIN users u ON u.id = m.sender_id`,
    [id, conversationId, JSON.stringify(embeds)],
  );
  return row && { message: toMessage(row), audienceIds: row.audience_ids };
}
