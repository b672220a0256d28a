import type { LoopMode, PlayerState, Track } from '@chat/contracts';
import { exec, exists, many, maybeOne, notFound, one, type Queryable } from '@chat/kit';

/** The player row as a control sees it under its lock. */
export interface LockedPlayer {
  channelId: string;
  serverId: string;
  /** A track is current (started, maybe paused); an idle player may still hold queued tracks. */
  playing: boolean;
  paused: boolean;
  volume: number;
  loop: LoopMode;
  shuffle: boolean;
  /** When the current track ends by itself; null while idle, paused or of unknown length. */
  endsAt: Date | null;
}

interface PlayerRow extends Record<string, unknown> {
  channel_id: string;
  server_id: string;
  started_at: string | null;
  paused_position_ms: number | null;
  volume: number;
  version: number;
  loop: LoopMode;
  shuffle: boolean;
  ends_at: string | null;
}

interface TrackRow extends Record<string, unknown> {
  id: string;
  url: string;
  title: string;
  requested_by: string;
  added_at: string;
  duration_ms: string | null;
}

/**
 * The position at `now` (a parameter: the domain's clock, read after the player's lock was taken,
 * so a control that waited for the lock acts when it runs): frozen while paused, else time since
 * the start.
 */
const positionMs = (now: string) => `CASE
  WHEN paused_position_ms IS NOT NULL THEN paused_position_ms
  WHEN started_at IS NOT NULL THEN greatest(0, floor(extract(epoch FROM ${now}::timestamptz - started_at) * 1000))::bigint
END`;
const PLAYER_COLUMNS = 'channel_id, server_id, started_at, paused_position_ms, volume, version, loop, shuffle, ends_at';
const TRACK_COLUMNS = 'id, url, title, requested_by, added_at, duration_ms';
const PLAY_ORDER = 'ORDER BY sort_key, seq';

/** Creates the channel's player when missing, then locks its row until the transaction ends. */
export async function lockPlayer(tx: Queryable, channelId: string, serverId: string): Promise<LockedPlayer> {
  await exec(tx, 'INSERT INTO players (channel_id, server_id) VALUES ($1, $2) ON CONFLICT (channel_id) DO NOTHING', [channelId, serverId]);
  const player = await findPlayerForUpdate(tx, channelId);
  if (!player) throw notFound('Player');
  return player;
}

/** Locks the channel's player row until the transaction ends, if it has one (never creates it). */
export async function findPlayerForUpdate(tx: Queryable, channelId: string): Promise<LockedPlayer | undefined> {
  const row = await maybeOne<PlayerRow>(tx, `SELECT ${PLAYER_COLUMNS} FROM players WHERE channel_id = $1 FOR UPDATE`, [channelId]);
  return row && toLockedPlayer(row);
}

/** Whether any player's current track has ended by `now`: the clock's question, four times a second, before it opens a transaction. */
export function anyDuePlayer(db: Queryable, now: Date): Promise<boolean> {
  return exists(db, 'SELECT 1 FROM players WHERE ends_at <= $1', [now]);
}

/**
 * Locks players whose current track has ended by `now`, skipping those another replica (or a
 * control) holds: each end is handled by whoever locked it, once.
 */
export async function lockDuePlayers(tx: Queryable, now: Date, limit: number): Promise<LockedPlayer[]> {
  const rows = await many<PlayerRow>(
    tx,
    `SELECT ${PLAYER_COLUMNS} FROM players WHERE ends_at <= $1 ORDER BY ends_at LIMIT $2 FOR UPDATE SKIP LOCKED`,
    [now, limit],
  );
  return rows.map(toLockedPlayer);
}

function toLockedPlayer(row: PlayerRow): LockedPlayer {
  return {
    channelId: row.channel_id,
    serverId: row.server_id,
    playing: row.started_at !== null,
    paused: row.paused_position_ms !== null,
    volume: row.volume,
    loop: row.loop,
    shuffle: row.shuffle,
    endsAt: row.ends_at === null ? null : new Date(row.ends_at),
  };
}

/** The whole state of a channel's player at `now`, or undefined when it never had one. */
export async function readPlayerState(db: Queryable, channelId: string, now: Date): Promise<PlayerState | undefined> {
  const row = await maybeOne<PlayerRow & { position_ms: number | null }>(
    db,
    `SELECT ${PLAYER_COLUMNS}, ${positionMs('$2')} AS position_ms FROM players WHERE channel_id = $1`,
    [channelId, now],
  );
  if (!row) return undefined;
  const tracks = (await listTracks(db, channelId)).map(toTrack);
  // An idle player may hold queued tracks (POST /v1/music/queue): then all of them are upcoming.
  const playing = row.started_at !== null;
  const current = row.started_at !== null ? tracks[0] : undefined;
  const queue = playing ? tracks.slice(1) : tracks;
  return {
    channelId: row.channel_id,
    serverId: row.server_id,
    current: current && row.started_at !== null ? { ...current, startedAt: row.started_at, positionMs: row.position_ms ?? 0 } : null,
    paused: row.paused_position_ms !== null,
    volume: row.volume,
    queue,
    version: row.version,
    loop: row.loop,
    shuffle: row.shuffle,
  };
}

async function listTracks(db: Queryable, channelId: string): Promise<TrackRow[]> {
  return many<TrackRow>(db, `SELECT ${TRACK_COLUMNS} FROM tracks WHERE channel_id = $1 ${PLAY_ORDER}`, [channelId]);
}

/** The first track of the queue: the one playing (or paused) unless the player is idle. */
export async function findCurrentTrack(db: Queryable, channelId: string): Promise<Track | undefined> {
  const row = await maybeOne<TrackRow>(db, `SELECT ${TRACK_COLUMNS} FROM tracks WHERE channel_id = $1 ${PLAY_ORDER} LIMIT 1`, [channelId]);
  return row && toTrack(row);
}

export async function countTracks(db: Queryable, channelId: string): Promise<number> {
  const row = await one<{ count: number }>(db, 'SELECT count(*)::int AS count FROM tracks WHERE channel_id = $1', [channelId]);
  return row.count;
}

/** Adds a track at the end of the play order. */
export async function insertTrack(tx: Queryable, channelId: string, track: Omit<Track, 'addedAt'>): Promise<void> {
  await exec(
    tx,
    `INSERT INTO tracks (id, channel_id, url, title, requested_by, duration_ms, sort_key)
     VALUES ($1, $2, $3, $4, $5, $6, (SELECT coalesce(max(sort_key), 0) + 1 FROM tracks WHERE channel_id = $2))`,
    [track.id, channelId, track.url, track.title, track.requestedBy, track.durationMs],
  );
}

/** Puts a track first in the play order (shuffle's pick becomes the current one). */
export async function moveTrackToFront(tx: Queryable, channelId: string, trackId: string): Promise<void> {
  await exec(tx, 'UPDATE tracks SET sort_key = (SELECT min(sort_key) - 1 FROM tracks WHERE channel_id = $1) WHERE id = $2', [
    channelId,
    trackId,
  ]);
}

/** Puts a track last in the play order (queue loop). */
export async function moveTrackToBack(tx: Queryable, channelId: string, trackId: string): Promise<void> {
  await exec(tx, 'UPDATE tracks SET sort_key = (SELECT max(sort_key) + 1 FROM tracks WHERE channel_id = $1) WHERE id = $2', [
    channelId,
    trackId,
  ]);
}

/** A random track of the queue other than `except` (shuffle). */
export async function randomTrack(tx: Queryable, channelId: string, except: string): Promise<string | undefined> {
  const row = await maybeOne<{ id: string }>(tx, 'SELECT id FROM tracks WHERE channel_id = $1 AND id <> $2 ORDER BY random() LIMIT 1', [
    channelId,
    except,
  ]);
  return row?.id;
}

/** Whether the track is in the channel's queue, and whether it is the current one. */
export async function findQueuedTrack(tx: Queryable, channelId: string, trackId: string): Promise<Track | undefined> {
  const row = await maybeOne<TrackRow>(tx, `SELECT ${TRACK_COLUMNS} FROM tracks WHERE channel_id = $1 AND id = $2`, [channelId, trackId]);
  return row && toTrack(row);
}

export async function deleteTrack(tx: Queryable, trackId: string): Promise<void> {
  await exec(tx, 'DELETE FROM tracks WHERE id = $1', [trackId]);
}

export async function deleteAllTracks(tx: Queryable, channelId: string): Promise<void> {
  await exec(tx, 'DELETE FROM tracks WHERE channel_id = $1', [channelId]);
}

/** The (new) first track starts, unpaused, `at`: now, or (for the clock) right when the previous one ended. */
export async function startCurrentTrack(tx: Queryable, channelId: string, at: Date): Promise<void> {
  await exec(tx, 'UPDATE players SET started_at = $2, paused_position_ms = NULL WHERE channel_id = $1', [channelId, at]);
}

/**
 * Recomputes when the current track ends: its start plus its length while it plays; nothing
 * while idle, paused or of unknown length. Answers the new end.
 */
export async function refreshEndsAt(tx: Queryable, channelId: string): Promise<Date | null> {
  const row = await one<{ ends_at: string | null }>(
    tx,
    `UPDATE players p SET ends_at = CASE WHEN p.started_at IS NOT NULL AND p.paused_position_ms IS NULL
       THEN p.started_at + (SELECT t.duration_ms FROM tracks t WHERE t.channel_id = p.channel_id ${PLAY_ORDER} LIMIT 1) * interval '1 millisecond'
     END
     WHERE p.channel_id = $1 RETURNING p.ends_at`,
    [channelId],
  );
  return row.ends_at === null ? null : new Date(row.ends_at);
}

/** Sets the modes given, keeping the others. */
export async function setModes(
  tx: Queryable,
  channelId: string,
  modes: { volume?: number; loop?: LoopMode; shuffle?: boolean },
): Promise<void> {
  await exec(
    tx,
    'UPDATE players SET volume = coalesce($2, volume), loop = coalesce($3, loop), shuffle = coalesce($4, shuffle) WHERE channel_id = $1',
    [channelId, modes.volume ?? null, modes.loop ?? null, modes.shuffle ?? null],
  );
}

/** Nothing is current any more. */
export async function markIdle(tx: Queryable, channelId: string): Promise<void> {
  await exec(tx, 'UPDATE players SET started_at = NULL, paused_position_ms = NULL WHERE channel_id = $1', [channelId]);
}

/** Freezes the position where it is at `now`. */
export async function pauseCurrentTrack(tx: Queryable, channelId: string, now: Date): Promise<void> {
  await exec(tx, `UPDATE players SET paused_position_ms = ${positionMs('$2')} WHERE channel_id = $1`, [channelId, now]);
}

/** Moves the start time forward by the pause, so that position = now - started_at holds again. */
export async function resumeCurrentTrack(tx: Queryable, channelId: string, now: Date): Promise<void> {
  await exec(
    tx,
    `UPDATE players SET started_at = $2::timestamptz - paused_position_ms * interval '1 millisecond', paused_position_ms = NULL
     WHERE channel_id = $1`,
    [channelId, now],
  );
}

/** Every change bumps the version, so clients can order the events of one player. */
export async function markChanged(tx: Queryable, channelId: string): Promise<void> {
  await exec(tx, 'UPDATE players SET version = version + 1, updated_at = now() WHERE channel_id = $1', [channelId]);
}

function toTrack(row: TrackRow): Track {
  return {
    id: row.id,
    url: row.url,
    title: row.title,
    requestedBy: row.requested_by,
    addedAt: row.added_at,
    durationMs: row.duration_ms === null ? null : Number(row.duration_ms),
  };
}
