import type { Channel, VoiceLeftReason, VoiceState } from '@chat/contracts';
import { many, maybeOne, type Queryable } from '@chat/kit';
import { toChannel } from './channels.ts';
import { holdLock } from './sql.ts';

type VoiceStateRow = {
  user_id: string;
  server_id: string;
  channel_id: string;
  self_mute: boolean;
  self_deaf: boolean;
  server_mute: boolean;
  server_deaf: boolean;
  joined_at: string;
  expires_at: string;
};

const COLUMNS = 'v.user_id, v.server_id, v.channel_id, v.self_mute, v.self_deaf, v.server_mute, v.server_deaf, v.joined_at, v.expires_at';
const RETURNING = COLUMNS.replaceAll('v.', '');

/**
 * A state counts while its heartbeat is fresh. It belongs to a member (the foreign key of migration
 * 0214): leaving the server ends it in the same transaction, so membership needs no check here, as
 * in the membership query's voice_channel_id (db/access.ts). An expired row is ended by the
 * sweeper (with its event); until then every reader ignores it.
 */
const LIVE = 'v.expires_at > now()';

const toVoiceState = (r: VoiceStateRow): VoiceState => ({
  userId: r.user_id,
  serverId: r.server_id,
  channelId: r.channel_id,
  selfMute: r.self_mute,
  selfDeaf: r.self_deaf,
  serverMute: r.server_mute,
  serverDeaf: r.server_deaf,
  joinedAt: r.joined_at,
  expiresAt: r.expires_at,
});

/** A user's state as stored: `endedReason` is null while it counts, else why it no longer does. */
export type StoredVoiceState = VoiceState & { endedReason: Extract<VoiceLeftReason, 'expired'> | null };

const ENDED_REASON = `CASE WHEN NOT (${LIVE}) THEN 'expired' END`;

/**
 * Serialises every change of one user's voice state, across replicas. A row lock is not enough:
 * a user with no state yet has no row to lock, and two first joins would race to insert it.
 */
export async function lockUserVoice(db: Queryable, userId: string): Promise<void> {
  await holdLock(db, 'voice', userId);
}

/** The user's state row, counting or not, locked for the rest of the transaction. */
export async function findVoiceStateForUpdate(db: Queryable, userId: string): Promise<StoredVoiceState | undefined> {
  const row = await maybeOne<VoiceStateRow & { ended_reason: StoredVoiceState['endedReason'] }>(
    db,
    `SELECT ${COLUMNS}, ${ENDED_REASON} AS ended_reason FROM voice_states v WHERE v.user_id = $1 FOR UPDATE OF v`,
    [userId],
  );
  return row && { ...toVoiceState(row), endedReason: row.ended_reason };
}

/**
 * Locks voice channels in id order, so that two transactions touching the same channels never
 * deadlock, and answers their current rows (a channel deleted meanwhile is simply absent).
 * NO KEY UPDATE: joins of one channel queue here, while inserts that only reference it do not.
 */
export async function lockChannels(db: Queryable, channelIds: readonly string[]): Promise<Map<string, Channel>> {
  const rows = await many<Parameters<typeof toChannel>[0]>(
    db,
    'SELECT * FROM channels WHERE id = ANY($1::uuid[]) ORDER BY id FOR NO KEY UPDATE',
    [[...new Set(channelIds)]],
  );
  return new Map(rows.map((r) => [r.id, toChannel(r)]));
}

/**
 * Puts the user in a channel: a new state, or their existing one moved (keeping selfMute/selfDeaf).
 * Server mute and deafen are the member's (migration 0218): a state takes them from the server's
 * member row, so a moderator's mute outlasts the connection it was set on.
 */
export async function upsertVoiceState(
  db: Queryable,
  s: { userId: string; serverId: string; channelId: string; ttlSeconds: number },
): Promise<VoiceState> {
  const row = await maybeOne<VoiceStateRow>(
    db,
    // A left join: a user who is no member inserts a row all the same, and the foreign key refuses
    // it (the join's retry answers that as for a non-member).
    `INSERT INTO voice_states AS v (user_id, server_id, channel_id, expires_at, server_mute, server_deaf)
     SELECT $1, $2, $3, now() + make_interval(secs => $4), COALESCE(m.voice_mute, false), COALESCE(m.voice_deaf, false)
     FROM (SELECT) one LEFT JOIN members m ON m.server_id = $2 AND m.user_id = $1
     ON CONFLICT (user_id) DO UPDATE SET server_id = EXCLUDED.server_id, channel_id = EXCLUDED.channel_id,
       joined_at = now(), expires_at = EXCLUDED.expires_at, last_active_at = now(),
       server_mute = EXCLUDED.server_mute, server_deaf = EXCLUDED.server_deaf
     RETURNING ${RETURNING}`,
    [s.userId, s.serverId, s.channelId, s.ttlSeconds],
  );
  return toVoiceState(row!);
}

/** Moves an existing state to another channel of the same server; its heartbeat deadline stays. A move counts as activity. */
export async function moveVoiceState(db: Queryable, userId: string, channelId: string): Promise<VoiceState> {
  const row = await maybeOne<VoiceStateRow>(
    db,
    `UPDATE voice_states SET channel_id = $2, joined_at = now(), last_active_at = now() WHERE user_id = $1 RETURNING ${RETURNING}`,
    [userId, channelId],
  );
  return toVoiceState(row!);
}

/** Pushes a live state's deadline forward (and its activity, when speaking); undefined when the user has no live state. */
export async function refreshVoiceState(
  db: Queryable,
  userId: string,
  ttlSeconds: number,
  speaking = false,
): Promise<VoiceState | undefined> {
  const row = await maybeOne<VoiceStateRow>(
    db,
    `UPDATE voice_states v SET expires_at = now() + make_interval(secs => $2),
       last_active_at = CASE WHEN $3 THEN now() ELSE v.last_active_at END
     WHERE v.user_id = $1 AND ${LIVE} RETURNING ${COLUMNS}`,
    [userId, ttlSeconds, speaking],
  );
  return row && toVoiceState(row);
}

export async function setSelfFlags(db: Queryable, userId: string, flags: { selfMute: boolean; selfDeaf: boolean }): Promise<VoiceState> {
  const row = await maybeOne<VoiceStateRow>(
    db,
    `UPDATE voice_states SET self_mute = $2, self_deaf = $3, last_active_at = now() WHERE user_id = $1 RETURNING ${RETURNING}`,
    [userId, flags.selfMute, flags.selfDeaf],
  );
  return toVoiceState(row!);
}

/** A moderator's server mute and deafen of a member: kept on the member, and on their current state. */
export async function setServerFlags(
  db: Queryable,
  state: Pick<VoiceState, 'userId' | 'serverId'>,
  flags: { serverMute: boolean; serverDeaf: boolean },
): Promise<VoiceState> {
  const row = await maybeOne<VoiceStateRow>(
    db,
    `WITH member AS (UPDATE members SET voice_mute = $3, voice_deaf = $4 WHERE server_id = $2 AND user_id = $1)
     UPDATE voice_states SET server_mute = $3, server_deaf = $4 WHERE user_id = $1 AND server_id = $2 RETURNING ${RETURNING}`,
    [state.userId, state.serverId, flags.serverMute, flags.serverDeaf],
  );
  return toVoiceState(row!);
}

export async function deleteVoiceState(db: Queryable, userId: string): Promise<VoiceState | undefined> {
  const row = await maybeOne<VoiceStateRow>(db, `DELETE FROM voice_states WHERE user_id = $1 RETURNING ${RETURNING}`, [userId]);
  return row && toVoiceState(row);
}

/** Deletes the user's state if it is in this server (live or not yet swept). */
export async function deleteVoiceStateIn(db: Queryable, userId: string, serverId: string): Promise<VoiceState | undefined> {
  const row = await maybeOne<VoiceStateRow>(db, `DELETE FROM voice_states WHERE user_id = $1 AND server_id = $2 RETURNING ${RETURNING}`, [
    userId,
    serverId,
  ]);
  return row && toVoiceState(row);
}

/** Deletes every state in the channel (live or not yet swept), each with why it no longer counted, if it did not. */
export async function deleteVoiceStatesOf(db: Queryable, channelId: string): Promise<StoredVoiceState[]> {
  const rows = await many<VoiceStateRow & { ended_reason: StoredVoiceState['endedReason'] }>(
    db,
    `DELETE FROM voice_states v WHERE v.channel_id = $1 RETURNING ${COLUMNS}, ${ENDED_REASON} AS ended_reason`,
    [channelId],
  );
  return rows.map((row) => ({ ...toVoiceState(row), endedReason: row.ended_reason }));
}

/** The server's voice channels that hold states (live or not yet swept). */
export async function voiceChannelsWithStates(db: Queryable, serverId: string): Promise<Channel[]> {
  const rows = await many<Parameters<typeof toChannel>[0]>(
    db,
    `SELECT c.* FROM channels c
      WHERE c.server_id = $1 AND c.channel_type = 'voice' AND EXISTS (SELECT 1 FROM voice_states v WHERE v.channel_id = c.id)
      ORDER BY c.id`,
    [serverId],
  );
  return rows.map(toChannel);
}

/** How many other users are live in the channel: what its userLimit is compared with. */
export async function countOthersIn(db: Queryable, channelId: string, userId: string): Promise<number> {
  const row = await maybeOne<{ n: number }>(
    db,
    `SELECT count(*)::int AS n FROM voice_states v WHERE v.channel_id = $1 AND v.user_id <> $2 AND ${LIVE}`,
    [channelId, userId],
  );
  return row?.n ?? 0;
}

/** Whether any state, live or not yet swept, is in the channel: a temporary channel goes only when none is. */
export async function channelHasStates(db: Queryable, channelId: string): Promise<boolean> {
  return Boolean(await maybeOne(db, 'SELECT 1 FROM voice_states WHERE channel_id = $1 LIMIT 1', [channelId]));
}

/** Which of these channels nobody is live in: no state, or only expired ones the sweeper has yet to end. */
export async function channelsWithoutLiveStates(db: Queryable, channelIds: readonly string[]): Promise<Set<string>> {
  const rows = await many<{ id: string }>(
    db,
    `SELECT c.id FROM unnest($1::uuid[]) AS c(id)
     WHERE NOT EXISTS (SELECT 1 FROM voice_states v WHERE v.channel_id = c.id AND ${LIVE})`,
    [[...new Set(channelIds)]],
  );
  return new Set(rows.map((r) => r.id));
}

export async function isLiveIn(db: Queryable, userId: string, channelId: string): Promise<boolean> {
  return Boolean(
    await maybeOne(db, `SELECT 1 FROM voice_states v WHERE v.user_id = $1 AND v.channel_id = $2 AND ${LIVE}`, [userId, channelId]),
  );
}

/** Which of these channels are voice channels (of any server). */
export async function voiceChannelsAmong(db: Queryable, channelIds: string[]): Promise<Set<string>> {
  const rows = await many<{ id: string }>(db, `SELECT c.id FROM channels c WHERE c.id = ANY($1::uuid[]) AND c.channel_type = 'voice'`, [
    channelIds,
  ]);
  return new Set(rows.map((r) => r.id));
}

/** Whose live states a read is about: a server's, one member's in a server, or those in some channels. */
export type VoiceScope = { serverId: string; userId?: string } | { channelIds: readonly string[] };

/** The live states in scope, by channel then by who came first. */
export async function listLiveStates(db: Queryable, scope: VoiceScope): Promise<VoiceState[]> {
  const { serverId, userId } = 'serverId' in scope ? scope : { serverId: undefined, userId: undefined };
  const channelIds = 'channelIds' in scope ? scope.channelIds : undefined;
  const rows = await many<VoiceStateRow>(
    db,
    `SELECT ${COLUMNS} FROM voice_states v
     WHERE ($1::uuid IS NULL OR v.server_id = $1) AND ($2::uuid IS NULL OR v.user_id = $2) AND ($3::uuid[] IS NULL OR v.channel_id = ANY($3))
       AND ${LIVE}
     ORDER BY v.channel_id, v.joined_at, v.user_id`,
    [serverId ?? null, userId ?? null, channelIds ?? null],
  );
  return rows.map(toVoiceState);
}

/**
 * Deletes up to `limit` states expired at `at`, skipping rows another transaction holds, so that
 * replicas sweeping at once split the work instead of waiting on each other.
 */
export async function deleteExpiredStates(db: Queryable, at: Date, limit: number): Promise<VoiceState[]> {
  const rows = await many<VoiceStateRow>(
    db,
    `WITH ended AS (
       SELECT v.user_id FROM voice_states v
       WHERE v.expires_at <= $1
       ORDER BY v.expires_at
       LIMIT $2
       FOR UPDATE OF v SKIP LOCKED
     )
     DELETE FROM voice_states v USING ended WHERE v.user_id = ended.user_id
     RETURNING ${COLUMNS}`,
    [at, limit],
  );
  return rows.map(toVoiceState);
}

/** The name a member goes by in a server: nickname, then display name, then username. */
export async function memberName(db: Queryable, serverId: string, userId: string): Promise<string | undefined> {
  const row = await maybeOne<{ name: string | null }>(
    db,
    `SELECT COALESCE(m.nickname, u.display_name, u.username) AS name
     FROM members m LEFT JOIN users u ON u.id = m.user_id WHERE m.server_id = $1 AND m.user_id = $2`,
    [serverId, userId],
  );
  return row?.name ?? undefined;
}

/** Marks a just-inserted channel as a temporary voice channel owned by `ownerId`. */
export async function markTemporary(db: Queryable, channelId: string, ownerId: string): Promise<Channel> {
  const row = await maybeOne<Parameters<typeof toChannel>[0]>(
    db,
    'UPDATE channels SET is_temporary = true, owner_id = $2 WHERE id = $1 RETURNING *',
    [channelId, ownerId],
  );
  return toChannel(row!);
}

/**
 * Claims up to `limit` live states idle at `at` for longer than their server's AFK timeout, in a
 * voice channel other than the server's AFK channel (which must be a voice channel, and not the
 * join-to-create channel: nobody stays in that one). Rows another transaction holds are skipped, so
 * replicas split the work and each state moves once.
 */
export async function claimIdleStates(db: Queryable, at: Date, limit: number): Promise<(VoiceState & { afkChannelId: string })[]> {
  const rows = await many<VoiceStateRow & { afk_channel_id: string }>(
    db,
    `SELECT ${COLUMNS}, s.afk_channel_id
     FROM voice_states v
     JOIN servers s ON s.id = v.server_id
     JOIN channels afk ON afk.id = s.afk_channel_id AND afk.channel_type = 'voice'
     WHERE v.channel_id <> s.afk_channel_id
       AND s.afk_channel_id IS DISTINCT FROM s.jtc_channel_id
       AND v.last_active_at <= $1::timestamptz - make_interval(secs => s.afk_timeout_seconds)
       AND ${LIVE}
     ORDER BY v.last_active_at
     LIMIT $2
     FOR UPDATE OF v SKIP LOCKED`,
    [at, limit],
  );
  return rows.map((r) => ({ ...toVoiceState(r), afkChannelId: r.afk_channel_id }));
}
