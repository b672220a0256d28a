import type { ChannelMessage, LinkPreview, MessageHas, MessageMentions, MessageType } from '@chat/contracts';
import { exec, many, maybeOne, type OutboxRow, one, type Pool, prepared, type Queryable } from '@chat/kit';
import {
  type MessageSource,
  type Page,
  pageOfMessages as pageOf,
  type SearchRequest,
  type SearchResult,
  type SearchScope,
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
 * everything committed, hence above everything that reader saw. The writers' side is
 * post_channel_message (migrations/0210_one_statement_post.sql), with the same key.
 */
const channelLockKey = `hashtextextended('messages:' || $1, 0)`;

const LOCK_CHANNEL_FOR_READ = prepared(`SELECT pg_advisory_xact_lock(${channelLockKey})`);

export type NewMessage = {
  /** A fresh UUID v7: the message's id unless the channel's latest does not sort before it. */
  id: string;
  channelId: string;
  serverId: string;
  authorId: string;
  content: string;
  attachments: Record<string, StoredFile>;
  replyToId: string | null;
  mentions: MessageMentions;
  type: MessageType;
  createdAt: string;
  /** For webhook messages: the webhook and the name and avatar it posts under. */
  webhook?: { id: string; name: string; avatarUrl: string | null };
};

/** What a post must still pass in its statement: the access version its snapshot was read at, and its slowmode window. */
export type PostChecks = { accessVersion: number | null; slowmodeSeconds: number };

export type PostOutcome =
  | { outcome: 'posted'; id: string; authorName: string | null; authorAvatar: string | null }
  | { outcome: 'stale' | 'no_reply' }
  | { outcome: 'slowmode'; retryAfter: number };

type PostRow = {
  outcome: PostOutcome['outcome'];
  retry_after: number | null;
  id: string | null;
  author_name: string | null;
  author_avatar: string | null;
};

// Named: prepared once per connection, then only bound.
const POST_MESSAGE = {
  name: 'guilds_post_channel_message',
  text: 'SELECT * FROM post_channel_message($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)',
};

/**
 * The checks, the message and its event in one statement (post_channel_message): refused, it
 * writes nothing and answers why. The event's envelope is the service's; the statement fills in
 * the id and the author's name and avatar.
 */
export async function postMessageRow(db: Queryable, m: NewMessage, event: OutboxRow, checks: PostChecks): Promise<PostOutcome> {
  const row = await one<PostRow>(db, POST_MESSAGE, [
    checks.accessVersion,
    checks.slowmodeSeconds,
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
    m.createdAt,
    event.id,
    event.subject,
    event.payload,
    event.headers,
  ]);
  if (row.outcome === 'posted') {
    return { outcome: 'posted', id: row.id as string, authorName: row.author_name, authorAvatar: row.author_avatar };
  }
  if (row.outcome === 'slowmode') return { outcome: 'slowmode', retryAfter: row.retry_after ?? 0 };
  return { outcome: row.outcome };
}

/**
 * How a read locks the message for the rest of the transaction: `update` to change or delete it,
 * `no key update` to change it without holding up replies and reactions to it, `key share` to write
 * rows that refer to it. Each makes a delete wait, and waits for one already under way (the message
 * is then not found, rather than a write failing on the foreign key).
 */
const MESSAGE_LOCKS = { update: 'FOR UPDATE OF m', 'no key update': 'FOR NO KEY UPDATE OF m', 'key share': 'FOR KEY SHARE OF m' } as const;

/** The message if it is in this channel: an id from another channel is simply not found. */
export async function findMessage(
  db: Queryable,
  channelId: string,
  id: string,
  options: { lock?: keyof typeof MESSAGE_LOCKS } = {},
): Promise<StoredMessage | undefined> {
  const lock = options.lock ? MESSAGE_LOCKS[options.lock] : '';
  const row = await maybeOne<MessageRow>(db, `SELECT ${COLUMNS} ${FROM} WHERE m.id = $1 AND m.channel_id = $2 ${lock}`, [id, channelId]);
  return row && toMessage(row);
}

/**
 * A page of a channel, newest first: before/after a cursor, around a message (it included), or the
 * newest; read under the channel's read lock, so its cursors never skip a post in flight.
 */
export function pageOfMessages(pool: Pool, channelId: string, page: Page): Promise<StoredMessage[]> {
  return pageOf(pool, CHANNEL_MESSAGES, channelId, page, { readLock: LOCK_CHANNEL_FOR_READ });
}

/** What a message has (Discord's `has:`), as a condition on `m`; a link as media's linksIn finds one. */
const HAS: Record<MessageHas, string> = {
  attachment: `m.attachments <> '{}'::jsonb`,
  link: `m.content ~* 'https?://[^\\s<>]'`,
};

export type ChannelSearch = Pick<SearchRequest, 'text' | 'page'> & { authorId?: string | undefined; has?: MessageHas | undefined };

/**
 * The channels a search reads: `only` these, or every channel of the server `except` these while
 * the server's channel list is still at `listVersion` (the version they were drawn from), so that a
 * channel created since is never read (migrations/0212_channel_list_versions.sql).
 */
export type ChannelScope = { only: string[] } | { except: string[]; serverId: string; listVersion: number };

/**
 * The messages in scope (the channels the caller may read) that match, newest first, and how many
 * match in all; `stale` when the channel list moved on from the one an `except` scope was drawn from.
 */
export function searchMessages(db: Queryable, scope: ChannelScope, search: ChannelSearch): Promise<SearchResult<StoredMessage> | 'stale'> {
  const conditions: string[] = [];
  const params: unknown[] = [];
  const placeholder = (value: unknown) => `$${5 + params.push(value)}`;
  if (search.authorId) conditions.push(`m.author_id = ${placeholder(search.authorId)}`);
  if (search.has) conditions.push(HAS[search.has]);
  let searchScope: SearchScope;
  if ('only' in scope) searchScope = scope;
  else {
    const serverId = placeholder(scope.serverId);
    conditions.push(`m.server_id = ${serverId}`);
    const current = `COALESCE((SELECT v.version FROM channel_list_versions v WHERE v.server_id = ${serverId}), 0) = ${placeholder(scope.listVersion)}`;
    searchScope = { except: scope.except, current };
  }
  const filter = conditions.length ? { where: conditions.join(' AND '), params } : undefined;
  return searchIn(db, CHANNEL_MESSAGES, { scope: searchScope, text: search.text, page: search.page, ...(filter && { filter }) });
}

/** An edit: the new text, its mentions, and the link previews it keeps. */
export async function updateContent(
  tx: Queryable,
  id: string,
  edit: { content: string; mentions: MessageMentions; embeds: LinkPreview[] },
): Promise<StoredMessage> {
  const row = await one<MessageRow>(
    tx,
    `WITH m AS (UPDATE messages SET content = $2, mentions = $3, embeds = $4, edited_at = now() WHERE id = $1 RETURNING *)
     SELECT ${COLUMNS} FROM m LEFT JOIN users u ON u.id = m.author_id`,
    [id, edit.content, edit.mentions, JSON.stringify(edit.embeds)],
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

/**
 * Locks a message against deletion for the rest of the transaction (a delete then waits, so its
 * event follows whatever this transaction publishes) and answers the author of the message it
 * replies to (null for none, a webhook's or a deleted one); undefined when the message is gone.
 */
export async function lockMentionSource(tx: Queryable, id: string): Promise<{ replyAuthorId: string | null } | undefined> {
  const row = await maybeOne<{ reply_author_id: string | null }>(
    tx,
    `SELECT r.author_id AS reply_author_id FROM messages m
     LEFT JOIN messages r ON r.id = m.reply_to_id AND r.webhook_id IS NULL
     WHERE m.id = $1 FOR SHARE OF m`,
    [id],
  );
  return row && { replyAuthorId: row.reply_author_id };
}

/** The display names of these users and the names of these roles, by id: what a notification excerpt shows. */
export async function mentionNames(db: Queryable, userIds: string[], roleIds: string[]): Promise<Record<string, string>> {
  if (userIds.length === 0 && roleIds.length === 0) return {};
  const rows = await many<{ id: string; name: string }>(
    db,
    `SELECT id::text, display_name AS name FROM users WHERE id = ANY($1::uuid[])
     UNION ALL SELECT id::text, name FROM roles WHERE id = ANY($2::uuid[])`,
    [userIds, roleIds],
  );
  return Object.fromEntries(rows.map((r) => [r.id, r.name]));
}
