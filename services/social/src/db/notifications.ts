import type { MentionVia, MessageMentions, Notification, NotificationLevel, NotificationSettings } from '@chat/contracts';
import { exec, many, maybeOne, type Queryable } from '@chat/kit';

/** The notification feed, its read mark and the notification settings (migration 0008). */

export type NewNotification = Omit<Notification, 'read'>;

type NotificationRow = {
  id: string;
  kind: Notification['kind'];
  via: MentionVia | null;
  actor_id: string | null;
  server_id: string | null;
  channel_id: string | null;
  conversation_id: string | null;
  message_id: string | null;
  call_id: string | null;
  excerpt: string | null;
  created_at: string;
  read: boolean;
};

const toNotification = (r: NotificationRow): Notification => ({
  id: r.id,
  kind: r.kind,
  via: r.via,
  actorId: r.actor_id,
  serverId: r.server_id,
  channelId: r.channel_id,
  conversationId: r.conversation_id,
  messageId: r.message_id,
  callId: r.call_id,
  excerpt: r.excerpt,
  createdAt: r.created_at,
  read: r.read,
});

/**
 * Adds one entry, with the same id, to each user's feed; `arrivedRead` for users who had already
 * read past its message (it shows as read and counts nowhere).
 */
export async function insertNotification(tx: Queryable, userIds: string[], n: NewNotification, arrivedRead = false): Promise<void> {
  await exec(
    tx,
    `INSERT INTO notifications (user_id, id, kind, via, actor_id, server_id, channel_id, conversation_id, message_id, call_id, excerpt, created_at, arrived_read)
     SELECT u, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13 FROM unnest($1::uuid[]) AS u
     ON CONFLICT DO NOTHING`,
    [
      userIds,
      n.id,
      n.kind,
      n.via,
      n.actorId,
      n.serverId,
      n.channelId,
      n.conversationId,
      n.messageId,
      n.callId,
      n.excerpt,
      n.createdAt,
      arrivedRead,
    ],
  );
}

/**
 * Whether an entry of a conversation may show: its user still takes part in it (a group they left
 * shows nothing of it, also an entry whose event was applied after the leave).
 */
const STILL_PARTICIPANT = `(n.conversation_id IS NULL OR EXISTS (
  SELECT 1 FROM conversation_participants p WHERE p.conversation_id = n.conversation_id AND p.user_id = n.user_id))`;

/**
 * A page of the feed, newest first, `before` an entry id; entries of `hiddenChannelIds` and of
 * conversations the user left are skipped in SQL, so LIMIT counts only entries that may show.
 */
export async function feedPage(
  db: Queryable,
  userId: string,
  page: { before?: string | undefined; limit: number; hiddenChannelIds: string[] },
): Promise<Notification[]> {
  const rows = await many<NotificationRow>(
    db,
    `SELECT n.id, n.kind, n.via, n.actor_id, n.server_id, n.channel_id, n.conversation_id, n.message_id, n.call_id, n.excerpt,
       n.created_at, (n.arrived_read OR (r.last_read_id IS NOT NULL AND n.id <= r.last_read_id)) AS read
     FROM notifications n LEFT JOIN notification_reads r ON r.user_id = n.user_id
     WHERE n.user_id = $1 AND ($2::uuid IS NULL OR n.id < $2)
       AND (n.channel_id IS NULL OR n.channel_id <> ALL($4::uuid[])) AND ${STILL_PARTICIPANT}
     ORDER BY n.id DESC LIMIT $3`,
    [userId, page.before ?? null, page.limit, page.hiddenChannelIds],
  );
  return rows.map(toNotification);
}

/**
 * The user's feed read mark, and the entries past it by channel (`channelId` null: entries of no
 * channel), conversations the user left left out: the caller drops the channels the user may not view.
 */
export async function feedUnread(
  db: Queryable,
  userId: string,
): Promise<{ lastReadId: string | null; unread: { channelId: string | null; count: number }[] }> {
  const mark = await maybeOne<{ last_read_id: string }>(db, 'SELECT last_read_id FROM notification_reads WHERE user_id = $1', [userId]);
  const rows = await many<{ channel_id: string | null; count: number }>(
    db,
    `SELECT n.channel_id, count(*)::int AS count FROM notifications n
     WHERE n.user_id = $1 AND ($2::uuid IS NULL OR n.id > $2) AND NOT n.arrived_read AND ${STILL_PARTICIPANT}
     GROUP BY n.channel_id`,
    [userId, mark?.last_read_id ?? null],
  );
  return { lastReadId: mark?.last_read_id ?? null, unread: rows.map((r) => ({ channelId: r.channel_id, count: r.count })) };
}

/** Whether the user's feed has an entry at or after `id` (a mark past every entry would hide later ones). */
export async function feedReaches(db: Queryable, userId: string, id: string): Promise<boolean> {
  return (await maybeOne(db, 'SELECT 1 FROM notifications WHERE user_id = $1 AND id >= $2 LIMIT 1', [userId, id])) !== undefined;
}

/** Moves the feed's read mark forwards only; answers whether it moved. */
export async function advanceFeedMark(tx: Queryable, userId: string, until: string): Promise<boolean> {
  const moved = await maybeOne(
    tx,
    `INSERT INTO notification_reads (user_id, last_read_id) VALUES ($1, $2)
     ON CONFLICT (user_id) DO UPDATE SET last_read_id = EXCLUDED.last_read_id WHERE notification_reads.last_read_id < EXCLUDED.last_read_id
     RETURNING 1`,
    [userId, until],
  );
  return moved !== undefined;
}

/** Entries one change removed from the feeds: their ids and whose they were, each once. */
export type RemovedEntries = { ids: string[]; userIds: string[] };

async function deleteEntries(tx: Queryable, where: string, params: unknown[]): Promise<RemovedEntries> {
  const rows = await many<{ id: string; user_id: string }>(tx, `DELETE FROM notifications WHERE ${where} RETURNING id, user_id`, params);
  return { ids: [...new Set(rows.map((r) => r.id))], userIds: [...new Set(rows.map((r) => r.user_id))] };
}

/** A friend request that ended unanswered (cancelled, declined, or by a block) leaves the feed, either way round. */
export function forgetFriendRequestNotifications(tx: Queryable, a: string, b: string): Promise<RemovedEntries> {
  return deleteEntries(tx, `kind = 'friend_request' AND ((user_id = $1 AND actor_id = $2) OR (user_id = $2 AND actor_id = $1))`, [a, b]);
}

/** A deleted message leaves every feed. */
export function forgetNotificationsOf(tx: Queryable, messageId: string): Promise<RemovedEntries> {
  return deleteEntries(tx, 'message_id = $1', [messageId]);
}

/**
 * An edited channel message's mention entries that its mentions now no longer make, deleted. Social
 * does not know who a role reaches, so while the message still names a role (or @everyone) every
 * mention entry stays; otherwise only the users it names keep theirs. Replies stay: an edit keeps
 * what the message answers.
 */
export async function forgetUnmadeMentions(tx: Queryable, messageId: string, mentions: MessageMentions): Promise<RemovedEntries> {
  if (mentions.everyone || mentions.roles.length > 0) return { ids: [], userIds: [] };
  return deleteEntries(tx, `message_id = $1 AND kind = 'mention' AND user_id <> ALL($2::uuid[])`, [messageId, mentions.users]);
}

/** An edited message's entries show its new start (an edit that removes text leaves none of it behind). */
export async function setExcerptOf(tx: Queryable, messageId: string, excerpt: string): Promise<void> {
  await exec(tx, 'UPDATE notifications SET excerpt = $2 WHERE message_id = $1 AND excerpt IS DISTINCT FROM $2', [messageId, excerpt]);
}

/**
 * A user who left a server (left, kicked or banned) keeps no entry of its channels from before
 * `until` (a later rejoin's entries stay, whichever consumer applies its event first).
 */
export function forgetServerChannelNotifications(tx: Queryable, userId: string, serverId: string, until: string): Promise<RemovedEntries> {
  return deleteEntries(tx, 'user_id = $1 AND server_id = $2 AND channel_id IS NOT NULL AND created_at <= $3::timestamptz', [
    userId,
    serverId,
    until,
  ]);
}

/** A user who left a group keeps no entry of it (a group cannot be joined again). */
export function forgetConversationNotifications(tx: Queryable, userId: string, conversationId: string): Promise<RemovedEntries> {
  return deleteEntries(tx, 'user_id = $1 AND conversation_id = $2', [userId, conversationId]);
}

type SettingsRow = { level: NotificationLevel; mute_until: string | null; channels: Record<string, NotificationLevel> };

/** The user's settings for a server; undefined when never set. */
export async function findSettings(db: Queryable, userId: string, serverId: string): Promise<NotificationSettings | undefined> {
  const row = await maybeOne<SettingsRow>(
    db,
    'SELECT level, mute_until, channels FROM notification_settings WHERE user_id = $1 AND server_id = $2',
    [userId, serverId],
  );
  return row && { serverId, level: row.level, muteUntil: row.mute_until, channels: row.channels };
}

export async function saveSettings(db: Queryable, userId: string, s: NotificationSettings): Promise<void> {
  await exec(
    db,
    `INSERT INTO notification_settings (user_id, server_id, level, mute_until, channels, updated_at) VALUES ($1, $2, $3, $4, $5, now())
     ON CONFLICT (user_id, server_id) DO UPDATE SET level = $3, mute_until = $4, channels = $5, updated_at = now()`,
    [userId, s.serverId, s.level, s.muteUntil, JSON.stringify(s.channels)],
  );
}

/** A deleted server's settings, of every user. */
export async function forgetServerSettings(tx: Queryable, serverId: string): Promise<void> {
  await exec(tx, 'DELETE FROM notification_settings WHERE server_id = $1', [serverId]);
}

/**
 * The settings of a user who left a server, unless written after `until` (a later rejoin's; the
 * event's time is guilds' clock, `updated_at` social's database's).
 */
export async function forgetMemberSettings(tx: Queryable, userId: string, serverId: string, until: string): Promise<void> {
  await exec(tx, 'DELETE FROM notification_settings WHERE user_id = $1 AND server_id = $2 AND updated_at <= $3::timestamptz', [
    userId,
    serverId,
    until,
  ]);
}

/**
 * Of these users mentioned in a channel, those whose settings let the mention count (Discord's
 * rules): the channel's level, else the server's, else `all`; `none` counts nothing; a server
 * muted at the message's time counts only direct mentions and replies. Nobody hears of someone
 * they blocked: the author's mentions and replies count for none of their blockers (as their
 * direct messages, NOT_FROM_BLOCKED).
 */
export async function usersCounting(
  db: Queryable,
  m: { userIds: string[]; serverId: string; channelId: string; authorId: string; direct: boolean; at: string },
): Promise<string[]> {
  const rows = await many<{ user_id: string }>(
    db,
    `SELECT u AS user_id FROM unnest($1::uuid[]) AS u
     LEFT JOIN notification_settings s ON s.user_id = u AND s.server_id = $2
     WHERE COALESCE(s.channels ->> $3::text, s.level, 'all') <> 'none'
       AND ($4 OR s.mute_until IS NULL OR s.mute_until <= $5::timestamptz)
       AND NOT EXISTS (SELECT 1 FROM blocks bl WHERE bl.blocker_id = u AND bl.blocked_id = $6)`,
    [m.userIds, m.serverId, m.channelId, m.direct, m.at, m.authorId],
  );
  return rows.map((r) => r.user_id);
}
