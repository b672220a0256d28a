import type { MentionVia, Notification, NotificationLevel, NotificationSettings } from '@chat/contracts';
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

/** Adds one entry, with the same id, to each user's feed. */
export async function insertNotification(tx: Queryable, userIds: string[], n: NewNotification): Promise<void> {
  await exec(
    tx,
    `INSERT INTO notifications (user_id, id, kind, via, actor_id, server_id, channel_id, conversation_id, message_id, call_id, excerpt, created_at)
     SELECT u, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12 FROM unnest($1::uuid[]) AS u
     ON CONFLICT DO NOTHING`,
    [userIds, n.id, n.kind, n.via, n.actorId, n.serverId, n.channelId, n.conversationId, n.messageId, n.callId, n.excerpt, n.createdAt],
  );
}

/** A page of the feed, newest first, `before` an entry id. */
export async function feedPage(
  db: Queryable,
  userId: string,
  page: { before?: string | undefined; limit: number },
): Promise<Notification[]> {
  const rows = await many<NotificationRow>(
    db,
    `SELECT n.id, n.kind, n.via, n.actor_id, n.server_id, n.channel_id, n.conversation_id, n.message_id, n.call_id, n.excerpt,
       n.created_at, (r.last_read_id IS NOT NULL AND n.id <= r.last_read_id) AS read
     FROM notifications n LEFT JOIN notification_reads r ON r.user_id = n.user_id
     WHERE n.user_id = $1 AND ($2::uuid IS NULL OR n.id < $2)
     ORDER BY n.id DESC LIMIT $3`,
    [userId, page.before ?? null, page.limit],
  );
  return rows.map(toNotification);
}

/** How many entries are past the user's read mark, and the mark. */
export async function feedUnread(db: Queryable, userId: string): Promise<{ unreadCount: number; lastReadId: string | null }> {
  const row = await maybeOne<{ unread: number; last_read_id: string | null }>(
    db,
    `SELECT (SELECT last_read_id FROM notification_reads WHERE user_id = $1) AS last_read_id,
       (SELECT count(*) FROM notifications n WHERE n.user_id = $1
          AND n.id > COALESCE((SELECT last_read_id FROM notification_reads WHERE user_id = $1), '00000000-0000-0000-0000-000000000000')) AS unread`,
    [userId],
  );
  return { unreadCount: row?.unread ?? 0, lastReadId: row?.last_read_id ?? null };
}

/** Moves the feed's read mark forwards only. */
export async function advanceFeedMark(tx: Queryable, userId: string, until: string): Promise<void> {
  await exec(
    tx,
    `INSERT INTO notification_reads (user_id, last_read_id) VALUES ($1, $2)
     ON CONFLICT (user_id) DO UPDATE SET last_read_id = GREATEST(notification_reads.last_read_id, EXCLUDED.last_read_id)`,
    [userId, until],
  );
}

/** A deleted message leaves every feed. */
export async function forgetNotificationsOf(tx: Queryable, messageId: string): Promise<void> {
  await exec(tx, 'DELETE FROM notifications WHERE message_id = $1', [messageId]);
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
    `INSERT INTO notification_settings (user_id, server_id, level, mute_until, channels) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (user_id, server_id) DO UPDATE SET level = $3, mute_until = $4, channels = $5`,
    [userId, s.serverId, s.level, s.muteUntil, JSON.stringify(s.channels)],
  );
}

/**
 * Of these users mentioned in a channel, those whose settings let the mention count (Discord's
 * rules): the channel's level, else the server's, else `all`; `none` counts nothing; a server
 * muted at the message's time counts only direct mentions and replies.
 */
export async function usersCounting(
  db: Queryable,
  m: { userIds: string[]; serverId: string; channelId: string; direct: boolean; at: string },
): Promise<string[]> {
  const rows = await many<{ user_id: string }>(
    db,
    `SELECT u AS user_id FROM unnest($1::uuid[]) AS u
     LEFT JOIN notification_settings s ON s.user_id = u AND s.server_id = $2
     WHERE COALESCE(s.channels ->> $3::text, s.level, 'all') <> 'none'
       AND ($4 OR s.mute_until IS NULL OR s.mute_until <= $5::timestamptz)`,
    [m.userIds, m.serverId, m.channelId, m.direct, m.at],
  );
  return rows.map((r) => r.user_id);
}
