import type { ChannelMessage, LinkPreview, MessageHas, MessageMentions, MessageType } from '@chat/contracts';
import { exec, many, maybeOne, one, type Queryable } from '@chat/kit';
import {
  type MessageSource,
  type Page,
  pageOfMessages as pageOf,
  type SearchRequest,
  type SearchResult,
  type StoredFile,
  searchMessages as searchIn,
} from '@chat/messaging';

/** Channel messages, with the author's name and avatar from the users read-model (one join, no calls). */

/** A message as stored; reactions depend on who looks, so they are added per viewer. */
export type StoredMessage = Omit<ChannelMessage, 'reactions'>;

type MessageRow = {
  id: string;
  channel_id: string;
  server_id: string;
  author_id: string;
  webhook_id: string | null;
  author_name: string | null;
  author_avatar: string | null;
  content: string;
  attachments: Record<string, StoredFile>;
  reply_to_id: string | null;
  mentions: MessageMentions;
  type: MessageType;
  embeds: LinkPreview[];
  pinned_at: string | null;
  edited_at: string | null;
  created_at: string;
};

// A webhook message carries its own name and avatar; a user's come from the read-model.
const COLUMNS = `m.id, m.channel_id, m.server_id, m.author_id, m.webhook_id, m.content, m.attachments, m.reply_to_id,
  m.mentions, m.type, m.embeds, m.pinned_at, m.edited_at, m.created_at,
  CASE WHEN m.webhook_id IS NULL THEN u.display_name ELSE m.author_name END AS author_name,
  CASE WHEN m.webhook_id IS NULL THEN u.avatar_url ELSE m.author_avatar END AS author_avatar`;
const FROM = 'FROM messages m LEFT JOIN users u ON u.id = m.author_id';

function toMessage(r: MessageRow): StoredMessage {
  return {
    id: r.id,
    channelId: r.channel_id,
    serverId: r.server_id,
    authorId: r.author_id,
    // An author whose auth event has not reached us yet still gets a readable name.
    authorName: r.author_name ?? 'Unknown user',
    authorAvatar: r.author_avatar,
    content: r.content,
    attachments: r.attachments,
    replyToId: r.reply_to_id,
    mentions: r.mentions,
    pinned: r.pinned_at !== null,
    editedAt: r.edited_at,
    createdAt: r.created_at,
    webhookId: r.webhook_id,
    type: r.type,
    embeds: r.embeds,
  };
}

const CHANNEL_MESSAGES: MessageSource<MessageRow, StoredMessage> = {
  table: 'messages',
  select: `SELECT ${COLUMNS} ${FROM}`,
  scope: 'm.channel_id',
  toMessage,
};

/**
 * Ids of a channel grow in commit order, so an `after` cursor never skips a message that commits
 * late. Writers hold this channel's lock shared (they do not wait for each other) from before
 * they pick an id until they commit; a reader takes it exclusive before its snapshot, so it waits
 * for the writers in flight and sees all of them. A writer that comes after picks an id above
 * everything committed (see latestMessageId), hence above everything that reader saw.
 */
const channelLockKey = `hashtextextended('messages:' || $1, 0)`;

export async function lockChannelForWrite(tx: Queryable, channelId: string): Promise<void> {
  await exec(tx, `SELECT pg_advisory_xact_lock_shared(${channelLockKey})`, [channelId]);
}

export async function lockChannelForRead(tx: Queryable, channelId: string): Promise<void> {
  await exec(tx, `SELECT pg_advisory_xact_lock(${channelLockKey})`, [channelId]);
}

/** The newest committed id of the channel (run after lockChannelForWrite, in its own statement). */
export async function latestMessageId(tx: Queryable, channelId: string): Promise<string | null> {
  const row = await maybeOne<{ id: string }>(tx, 'SELECT id FROM messages WHERE channel_id = $1 ORDER BY id DESC LIMIT 1', [channelId]);
  return row?.id ?? null;
}

export type NewMessage = {
  id: string;
  channelId: string;
  serverId: string;
  authorId: string;
  content: string;
  attachments: Record<string, StoredFile>;
  replyToId: string | null;
  mentions: MessageMentions;
  type: MessageType;
  /** For webhook messages: the webhook and the name and avatar it posts under. */
  webhook?: { id: string; name: string; avatarUrl: string | null };
};

export async function insertMessage(tx: Queryable, m: NewMessage): Promise<StoredMessage> {
  const row = await one<MessageRow>(
    tx,
    `WITH m AS (
       INSERT INTO messages (id, channel_id, server_id, author_id, content, attachments, reply_to_id, mentions, type, webhook_id, author_name, author_avatar)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING *)
     SELECT ${COLUMNS} FROM m LEFT JOIN users u ON u.id = m.author_id`,
    [
      m.id,
      m.channelId,
      m.serverId,
      m.authorId,
      m.content,
      m.attachments,
      m.replyToId,
      m.mentions,
      m.type,
      m.webhook?.id ?? null,
      m.webhook?.name ?? null,
      m.webhook?.avatarUrl ?? null,
    ],
  );
  return toMessage(row);
}

/** The message if it is in this channel: an id from another channel is simply not found. */
export async function findMessage(
  db: Queryable,
  channelId: string,
  id: string,
  options: { lock?: boolean } = {},
): Promise<StoredMessage | undefined> {
  const lock = options.lock ? 'FOR UPDATE OF m' : '';
  const row = await maybeOne<MessageRow>(db, `SELECT ${COLUMNS} ${FROM} WHERE m.id = $1 AND m.channel_id = $2 ${lock}`, [id, channelId]);
  return row && toMessage(row);
}

export async function messageExists(db: Queryable, channelId: string, id: string): Promise<boolean> {
  return Boolean(await maybeOne(db, 'SELECT 1 FROM messages WHERE id = $1 AND channel_id = $2', [id, channelId]));
}

/** A page of a channel, newest first: before/after a cursor, around a message (it included), or the newest. */
export function pageOfMessages(db: Queryable, channelId: string, page: Page): Promise<StoredMessage[]> {
  return pageOf(db, CHANNEL_MESSAGES, channelId, page);
}

/** What a message has (Discord's `has:`), as a condition on `m`; a link as media's linksIn finds one. */
const HAS: Record<MessageHas, string> = {
  attachment: `m.attachments <> '{}'::jsonb`,
  link: `m.content ~* 'https?://[^\\s<>]'`,
};

export type ChannelSearch = Pick<SearchRequest, 'text' | 'page'> & { authorId?: string | undefined; has?: MessageHas | undefined };

/** The messages of these channels (those the caller may read) that match, newest first, and how many match in all. */
export function searchMessages(db: Queryable, channelIds: string[], search: ChannelSearch): Promise<SearchResult<StoredMessage>> {
  const conditions: string[] = [];
  const params: unknown[] = [];
  if (search.authorId) {
    params.push(search.authorId);
    conditions.push(`m.author_id = $${5 + params.length}`);
  }
  if (search.has) conditions.push(HAS[search.has]);
  const filter = conditions.length ? { where: conditions.join(' AND '), params } : undefined;
  return searchIn(db, CHANNEL_MESSAGES, { scopeIds: channelIds, text: search.text, page: search.page, ...(filter && { filter }) });
}

export async function updateContent(tx: Queryable, id: string, content: string, mentions: MessageMentions): Promise<StoredMessage> {
  const row = await one<MessageRow>(
    tx,
    `WITH m AS (UPDATE messages SET content = $2, mentions = $3, edited_at = now() WHERE id = $1 RETURNING *)
     SELECT ${COLUMNS} FROM m LEFT JOIN users u ON u.id = m.author_id`,
    [id, content, mentions],
    'Message',
  );
  return toMessage(row);
}

export function deleteMessageRow(tx: Queryable, id: string): Promise<number> {
  return exec(tx, 'DELETE FROM messages WHERE id = $1', [id]);
}

// ---- Pins ----

/** Serialises pin changes of one channel, so two pins at once cannot both be the 50th. */
export async function lockPins(tx: Queryable, channelId: string): Promise<void> {
  await exec(tx, `SELECT pg_advisory_xact_lock(hashtextextended('pins:' || $1, 0))`, [channelId]);
}

export async function countPins(db: Queryable, channelId: string): Promise<number> {
  const row = await one<{ n: number }>(db, 'SELECT count(*)::int AS n FROM messages WHERE channel_id = $1 AND pinned_at IS NOT NULL', [
    channelId,
  ]);
  return row.n;
}

/** Pins or unpins; answers whether anything changed (pinning a pinned message keeps its first pin time). */
export async function setPinned(tx: Queryable, id: string, pinned: boolean): Promise<boolean> {
  const sql = pinned
    ? 'UPDATE messages SET pinned_at = now() WHERE id = $1 AND pinned_at IS NULL'
    : 'UPDATE messages SET pinned_at = NULL WHERE id = $1 AND pinned_at IS NOT NULL';
  return (await exec(tx, sql, [id])) > 0;
}

export async function pinnedMessages(db: Queryable, channelId: string): Promise<StoredMessage[]> {
  const rows = await many<MessageRow>(
    db,
    `SELECT ${COLUMNS} ${FROM} WHERE m.channel_id = $1 AND m.pinned_at IS NOT NULL ORDER BY m.pinned_at DESC, m.id DESC`,
    [channelId],
  );
  return rows.map(toMessage);
}

// ---- Slowmode ----

/**
 * Records that the member posts now, unless they posted less than `seconds` ago; then answers how
 * many seconds remain. Concurrent posts of one member queue on the row, so only one gets through.
 */
export async function claimSlowmodeSlot(tx: Queryable, channelId: string, userId: string, seconds: number): Promise<number | undefined> {
  const claimed = await maybeOne(
    tx,
    `INSERT INTO slowmode_marks (channel_id, user_id, sent_at) VALUES ($1, $2, clock_timestamp())
     ON CONFLICT (channel_id, user_id) DO UPDATE SET sent_at = EXCLUDED.sent_at
       WHERE slowmode_marks.sent_at <= EXCLUDED.sent_at - make_interval(secs => $3)
     RETURNING 1`,
    [channelId, userId, seconds],
  );
  if (claimed) return undefined;
  const row = await one<{ remaining: number }>(
    tx,
    `SELECT extract(epoch FROM sent_at + make_interval(secs => $3) - clock_timestamp())::float8 AS remaining
     FROM slowmode_marks WHERE channel_id = $1 AND user_id = $2`,
    [channelId, userId, seconds],
  );
  return row.remaining;
}

// ---- Mentions ----

/** Of the ids a message names, the server's members, and the server's roles (@everyone aside) with whether each is mentionable. */
export async function mentionTargets(
  db: Queryable,
  serverId: string,
  userIds: string[],
  roleIds: string[],
): Promise<{ members: string[]; roles: { id: string; mentionable: boolean }[] }> {
  const row = await one<{ members: string[]; roles: { id: string; mentionable: boolean }[] }>(
    db,
    `SELECT
       ARRAY(SELECT user_id::text FROM members WHERE server_id = $1 AND user_id = ANY($2::uuid[]) ORDER BY user_id) AS members,
       COALESCE((SELECT json_agg(json_build_object('id', id, 'mentionable', mentionable) ORDER BY id)
                 FROM roles WHERE server_id = $1 AND id <> $1 AND id = ANY($3::uuid[])), '[]') AS roles`,
    [serverId, userIds, roleIds],
  );
  return row;
}

/** Stores the link previews media resolved for a message of this channel; undefined when it is gone. */
export async function setMessageEmbeds(
  tx: Queryable,
  channelId: string,
  id: string,
  embeds: LinkPreview[],
): Promise<StoredMessage | undefined> {
  const row = await maybeOne<MessageRow>(
    tx,
    `WITH m AS (UPDATE messages SET embeds = $3 WHERE id = $1 AND channel_id = $2 RETURNING *)
     SELECT ${COLUMNS} FROM m LEFT JOIN users u ON u.id = m.author_id`,
    [id, channelId, JSON.stringify(embeds)],
  );
  return row && toMessage(row);
}
