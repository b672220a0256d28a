import type { ReadState, ReadStateKind } from '@chat/contracts';
import { exec, many, maybeOne, prepared, type Queryable } from '@chat/kit';
import { lastIdAt } from '@chat/messaging';
import { NOT_FROM_BLOCKED } from './relationships.ts';

/** Read states, channel heads and channel mentions (migration 0008). */

/** Below every UUID: "nothing read yet" in comparisons. */
const NOTHING = '00000000-0000-0000-0000-000000000000';

type ReadStateRow = {
  id: string;
  kind: ReadStateKind;
  last_read_message_id: string | null;
  last_message_id: string | null;
  mention_count: number;
};

const toReadState = (r: ReadStateRow): ReadState => ({
  id: r.id,
  kind: r.kind,
  lastReadMessageId: r.last_read_message_id,
  lastMessageId: r.last_message_id,
  unread: r.last_message_id !== null && (r.last_read_message_id === null || r.last_message_id > r.last_read_message_id),
  mentionCount: r.mention_count,
});

const CHANNEL_SELECT = `
  SELECT rs.target_id AS id, rs.kind, rs.last_read_message_id, h.last_message_id,
    (SELECT count(*) FROM channel_mentions cm WHERE cm.user_id = rs.user_id AND cm.channel_id = rs.target_id
       AND cm.message_id > COALESCE(rs.last_read_message_id, '${NOTHING}')) AS mention_count
  FROM read_states rs LEFT JOIN channel_heads h ON h.channel_id = rs.target_id
  WHERE rs.user_id = $1 AND rs.kind = 'channel'`;

// A conversation's mentions are the others' messages past the read mark (as on Discord's DMs). A
// blocker never sees the messages of the people they blocked, so those count nowhere: not as
// mentions, and not as its last message either, which `unread` compares with the read mark (and
// whose UUID v7 would tell the blocker when the hidden message was posted).
const CONVERSATION_SELECT = `
  SELECT p.conversation_id AS id, 'conversation' AS kind, rs.last_read_message_id,
    (SELECT d.id FROM direct_messages d WHERE d.conversation_id = p.conversation_id AND ${NOT_FROM_BLOCKED('d', 'p.user_id')}
       ORDER BY d.id DESC LIMIT 1) AS last_message_id,
    (SELECT count(*) FROM direct_messages d WHERE d.conversation_id = p.conversation_id AND d.sender_id <> p.user_id
       AND d.id > COALESCE(rs.last_read_message_id, '${NOTHING}') AND ${NOT_FROM_BLOCKED('d', 'p.user_id')}) AS mention_count
  FROM conversation_participants p
  LEFT JOIN read_states rs ON rs.user_id = p.user_id AND rs.target_id = p.conversation_id
  WHERE p.user_id = $1`;

/** The user's channel read states (visibility not yet applied), by channel id. */
export async function channelReadStates(db: Queryable, userId: string, channelId?: string): Promise<ReadState[]> {
  const rows = await many<ReadStateRow>(db, `${CHANNEL_SELECT} AND ($2::uuid IS NULL OR rs.target_id = $2) ORDER BY rs.target_id`, [
    userId,
    channelId ?? null,
  ]);
  return rows.map(toReadState);
}

/** The read state of every conversation the user takes part in (or of one), by conversation id. */
export async function conversationReadStates(db: Queryable, userId: string, conversationId?: string): Promise<ReadState[]> {
  const rows = await many<ReadStateRow>(
    db,
    `${CONVERSATION_SELECT} AND ($2::uuid IS NULL OR p.conversation_id = $2) ORDER BY p.conversation_id`,
    [userId, conversationId ?? null],
  );
  return rows.map(toReadState);
}

// Applied for every batch of messages posted (the authors' read marks, the channels' heads): prepared.
const ADVANCE_READ_MARKS = prepared(`INSERT INTO read_states (user_id, target_id, kind, last_read_message_id)
  SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::uuid[])
  ON CONFLICT (user_id, target_id) DO UPDATE SET last_read_message_id = EXCLUDED.last_read_message_id
    WHERE read_states.last_read_message_id IS NULL OR read_states.last_read_message_id < EXCLUDED.last_read_message_id`);
const FORGET_MENTIONS_READ = prepared(`DELETE FROM channel_mentions cm
  USING unnest($1::uuid[], $2::uuid[], $3::uuid[]) AS r(user_id, channel_id, message_id)
  WHERE cm.user_id = r.user_id AND cm.channel_id = r.channel_id AND cm.message_id <= r.message_id`);
const ADVANCE_CHANNEL_HEADS = prepared(`INSERT INTO channel_heads (channel_id, server_id, last_message_id)
  SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::uuid[])
  ON CONFLICT (channel_id) DO UPDATE SET last_message_id = GREATEST(channel_heads.last_message_id, EXCLUDED.last_message_id)`);

export type ReadMark = { userId: string; targetId: string; kind: ReadStateKind; messageId: string };

/**
 * Moves read marks forwards (an older id changes nothing) and forgets the channel mentions they
 * passed, in one statement each however many marks: a user's mark on a target moves to the newest
 * of its ids. Answers how many marks moved.
 */
export async function advanceReadMarks(tx: Queryable, marks: ReadMark[]): Promise<number> {
  const newest = newestBy(marks, (m) => `${m.userId}:${m.targetId}`);
  if (newest.length === 0) return 0;
  const moved = await exec(tx, ADVANCE_READ_MARKS, columns(newest, ['userId', 'targetId', 'kind', 'messageId']));
  const channels = newest.filter((m) => m.kind === 'channel');
  if (channels.length > 0) await exec(tx, FORGET_MENTIONS_READ, columns(channels, ['userId', 'targetId', 'messageId']));
  return moved;
}

/** Moves one read mark forwards; answers whether it moved. */
export async function advanceReadMark(
  tx: Queryable,
  userId: string,
  targetId: string,
  kind: ReadStateKind,
  messageId: string,
): Promise<boolean> {
  return (await advanceReadMarks(tx, [{ userId, targetId, kind, messageId }])) > 0;
}

export type ChannelHead = { channelId: string; serverId: string; messageId: string };

/** Channels' newest message ids move forwards only (events may arrive out of order), in one statement. */
export async function advanceChannelHeads(tx: Queryable, heads: ChannelHead[]): Promise<void> {
  const newest = newestBy(heads, (h) => h.channelId);
  if (newest.length > 0) await exec(tx, ADVANCE_CHANNEL_HEADS, columns(newest, ['channelId', 'serverId', 'messageId']));
}

/** One entry per key, the one with the newest message id (ids sort as their time; one row may not be upserted twice in a statement). */
function newestBy<T extends { messageId: string }>(entries: T[], keyOf: (entry: T) => string): T[] {
  const newest = new Map<string, T>();
  for (const entry of entries) {
    const kept = newest.get(keyOf(entry));
    if (!kept || kept.messageId < entry.messageId) newest.set(keyOf(entry), entry);
  }
  return [...newest.values()];
}

/** The entries as one array per field, for unnest(). */
function columns<T>(entries: T[], fields: (keyof T)[]): unknown[][] {
  return fields.map((field) => entries.map((entry) => entry[field]));
}

/**
 * Records a mention of each of these users (already filtered by their settings): a read state row
 * for the channel, and the mention unless the user has already read past the message. Answers the
 * users it counted for (a mention already recorded is not counted again) and those who had read past it.
 */
export async function recordMentions(
  tx: Queryable,
  userIds: string[],
  channelId: string,
  messageId: string,
): Promise<{ counted: string[]; readPast: string[] }> {
  if (userIds.length === 0) return { counted: [], readPast: [] };
  await exec(
    tx,
    `INSERT INTO read_states (user_id, target_id, kind) SELECT u, $2, 'channel' FROM unnest($1::uuid[]) AS u
     ON CONFLICT (user_id, target_id) DO NOTHING`,
    [userIds, channelId],
  );
  const rows = await many<{ user_id: string; read_past: boolean }>(
    tx,
    `WITH mentioned AS (
       SELECT rs.user_id, COALESCE(rs.last_read_message_id, '${NOTHING}') >= $3 AS read_past FROM read_states rs
       WHERE rs.user_id = ANY($1::uuid[]) AND rs.target_id = $2),
     counted AS (
       INSERT INTO channel_mentions (user_id, channel_id, message_id)
       SELECT user_id, $2, $3 FROM mentioned WHERE NOT read_past
       ON CONFLICT DO NOTHING
       RETURNING user_id)
     SELECT user_id, false AS read_past FROM counted
     UNION ALL SELECT user_id, true FROM mentioned WHERE read_past`,
    [userIds, channelId, messageId],
  );
  return {
    counted: rows.filter((r) => !r.read_past).map((r) => r.user_id),
    readPast: rows.filter((r) => r.read_past).map((r) => r.user_id),
  };
}

/**
 * A member who left keeps no mention of the server's channels from before `until` (message ids
 * are UUIDv7, so the id of the last possible message of that millisecond bounds them): one of a
 * rejoin that the leave's event is processed after still counts.
 */
export async function forgetServerMentions(tx: Queryable, userId: string, serverId: string, until: string): Promise<void> {
  const lastIdThen = lastIdAt(Date.parse(until));
  await exec(
    tx,
    `DELETE FROM channel_mentions cm USING channel_heads h
     WHERE cm.user_id = $1 AND h.channel_id = cm.channel_id AND h.server_id = $2 AND cm.message_id <= $3`,
    [userId, serverId, lastIdThen],
  );
}

/** A deleted message no longer counts as anyone's mention. */
export async function forgetMentionsOf(tx: Queryable, messageId: string): Promise<void> {
  await exec(tx, 'DELETE FROM channel_mentions WHERE message_id = $1', [messageId]);
}

/** An edited message no longer counts as a mention of these users (the edit took it out). */
export async function forgetMentionsOfUsers(tx: Queryable, messageId: string, userIds: string[]): Promise<void> {
  if (userIds.length > 0)
    await exec(tx, 'DELETE FROM channel_mentions WHERE message_id = $1 AND user_id = ANY($2::uuid[])', [messageId, userIds]);
}

/**
 * Whether a read mark at `messageId` passes no message the user has not been shown: it names a
 * message of the conversation, or one older than its newest (a message deleted since).
 */
export async function isReadableMark(db: Queryable, conversationId: string, messageId: string): Promise<boolean> {
  const row = await maybeOne(
    db,
    `SELECT 1 WHERE EXISTS (SELECT 1 FROM direct_messages WHERE id = $2::uuid AND conversation_id = $1::uuid)
       OR $2::uuid < (SELECT id FROM direct_messages WHERE conversation_id = $1::uuid ORDER BY id DESC LIMIT 1)`,
    [conversationId, messageId],
  );
  return row !== undefined;
}

/** Is the user a participant of the conversation? */
export async function isParticipant(db: Queryable, userId: string, conversationId: string): Promise<boolean> {
  const row = await maybeOne(db, 'SELECT 1 FROM conversation_participants WHERE conversation_id = $1 AND user_id = $2', [
    conversationId,
    userId,
  ]);
  return row !== undefined;
}
