import type { Call } from '@chat/contracts';
import { exec, exists, many, maybeOne, prepared, type Queryable } from '@chat/kit';

type CallRow = {
  id: string;
  conversation_id: string;
  initiator_id: string;
  state: Call['state'];
  created_at: string;
  answered_at: string | null;
  ended_at: string | null;
  end_reason: Call['endReason'];
  participants: Call['participants'];
};

const COLUMNS = `c.id, c.conversation_id, c.initiator_id, c.state, c.created_at, c.answered_at, c.ended_at, c.end_reason,
  coalesce((SELECT json_agg(json_build_object('userId', p.user_id, 'state', p.state) ORDER BY p.user_id)
    FROM call_participants p WHERE p.call_id = c.id), '[]') AS participants`;

const toCall = (r: CallRow): Call => ({
  id: r.id,
  conversationId: r.conversation_id,
  initiatorId: r.initiator_id,
  state: r.state,
  participants: r.participants,
  createdAt: r.created_at,
  answeredAt: r.answered_at,
  endedAt: r.ended_at,
  endReason: r.end_reason,
});

/** Creates a ringing call; undefined when the conversation already has a live one. */
export async function insertCall(
  tx: Queryable,
  c: { id: string; conversationId: string; initiatorId: string; now: Date; ringExpiresAt: Date; rung: string[] },
): Promise<boolean> {
  const inserted = await tx.query(
    `INSERT INTO calls (id, conversation_id, initiator_id, state, created_at, ring_expires_at) VALUES ($1, $2, $3, 'ringing', $4, $5)
     ON CONFLICT (conversation_id) WHERE state <> 'ended' DO NOTHING`,
    [c.id, c.conversationId, c.initiatorId, c.now, c.ringExpiresAt],
  );
  if (inserted.rowCount === 0) return false;
  await exec(
    tx,
    `INSERT INTO call_participants (call_id, user_id, state)
     SELECT $1, u, CASE WHEN u = $2 THEN 'joined' ELSE 'ringing' END FROM unnest($3::uuid[]) AS u`,
    [c.id, c.initiatorId, [c.initiatorId, ...c.rung]],
  );
  return true;
}

export async function findCall(db: Queryable, id: string, options: { lock?: boolean } = {}): Promise<Call | undefined> {
  const row = await maybeOne<CallRow>(db, `SELECT ${COLUMNS} FROM calls c WHERE c.id = $1${options.lock ? ' FOR UPDATE OF c' : ''}`, [id]);
  return row && toCall(row);
}

/** The calls among these ids, in one query (ids that are no call are left out). */
export async function findCalls(db: Queryable, ids: string[]): Promise<Call[]> {
  return (await many<CallRow>(db, `SELECT ${COLUMNS} FROM calls c WHERE c.id = ANY($1::uuid[])`, [ids])).map(toCall);
}

// Beside every list of conversations: prepared.
const LIVE_CALLS_OF = prepared(`SELECT ${COLUMNS} FROM calls c WHERE c.conversation_id = ANY($1::uuid[]) AND c.state <> 'ended'`);

/** The live calls (at most one each) of these conversations, in one query. */
export async function liveCallsOf(db: Queryable, conversationIds: string[]): Promise<Call[]> {
  if (conversationIds.length === 0) return [];
  const rows = await many<CallRow>(db, LIVE_CALLS_OF, [conversationIds]);
  return rows.map(toCall);
}

export async function setParticipantState(tx: Queryable, callId: string, userId: string, state: Call['participants'][number]['state']) {
  await exec(
    tx,
    `INSERT INTO call_participants (call_id, user_id, state) VALUES ($1, $2, $3)
     ON CONFLICT (call_id, user_id) DO UPDATE SET state = EXCLUDED.state`,
    [callId, userId, state],
  );
}

export async function markAnswered(tx: Queryable, callId: string, now: Date): Promise<void> {
  await exec(tx, "UPDATE calls SET state = 'active', answered_at = coalesce(answered_at, $2) WHERE id = $1", [callId, now]);
}

export async function markEnded(tx: Queryable, callId: string, now: Date, reason: NonNullable<Call['endReason']>): Promise<void> {
  await exec(tx, "UPDATE calls SET state = 'ended', ended_at = $2, end_reason = $3 WHERE id = $1", [callId, now, reason]);
}

/**
 * A live call whose ring is over and that still rings someone: unanswered, or answered while others
 * were still being rung. `state <> 'ended'` as the index of live calls says it, so that index finds them.
 */
const RING_OVER = `c.state <> 'ended' AND c.ring_expires_at <= $1
  AND (c.state = 'ringing' OR EXISTS (SELECT 1 FROM call_participants p WHERE p.call_id = c.id AND p.state = 'ringing'))`;

/** Whether any call still rings past its time: the clock's question, every second, before it opens a transaction. */
export function anyUnansweredCall(db: Queryable, now: Date): Promise<boolean> {
  return exists(db, `SELECT 1 FROM calls c WHERE ${RING_OVER}`, [now]);
}

/**
 * Calls still ringing past their time, locked with their conversation (where the missed call's
 * message goes). Rows another transaction holds are skipped, never waited for: another replica ends
 * them, or a message being sent delays them to the next round; so the clock cannot deadlock with a ring.
 */
export async function lockUnansweredCalls(tx: Queryable, now: Date, limit: number): Promise<string[]> {
  const rows = await many<{ id: string }>(
    tx,
    `SELECT c.id FROM calls c JOIN conversations v ON v.id = c.conversation_id
     WHERE ${RING_OVER} ORDER BY c.ring_expires_at LIMIT $2
     FOR UPDATE OF c SKIP LOCKED FOR NO KEY UPDATE OF v SKIP LOCKED`,
    [now, limit],
  );
  return rows.map((r) => r.id);
}

/** Those the call still rings stop ringing, as if they had declined (they may still join it). */
export async function declineStillRinging(tx: Queryable, callId: string): Promise<void> {
  await exec(tx, "UPDATE call_participants SET state = 'declined' WHERE call_id = $1 AND state = 'ringing'", [callId]);
}
