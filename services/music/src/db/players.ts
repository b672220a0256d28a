import type { PlayerState, Track } from '@chat/contracts';
import { exec, many, maybeOne, one, type Queryable } from '@chat/kit';

/** The player row as a control sees it under its lock. */
export interface LockedPlayer {
  channelId: string;
  serverId: string;
  /** Something is current (the queue is not empty). */
  playing: boolean;
  paused: boolean;
  volume: number;
}

interface PlayerRow extends Record<string, unknown> {
  channel_id: string;
  server_id: string;
  started_at: string | null;
  paused_position_ms: number | null;
  position_ms: number | null;
  volume: number;
  version: number;
}

interface TrackRow extends Record<string, unknown> {
  id: string;
  url: string;
  title: string;
  requested_by: string;
  added_at: string;
}

/**
 * The player's clock: the time a caller passes (tests drive it), or else the database's
 * clock_timestamp(), one clock for every replica. clock_timestamp(), not now(): a control may have
 * waited for the row lock, and the track starts (or pauses) when the statement runs, not when its
 * transaction began. `param` is the placeholder of the caller's time (null for the database's).
 */
export type Clock = Date | null;
const clockAt = (param: string) => `coalesce(${param}::timestamptz, clock_timestamp())`;
const positionMs = (param: string) => `CASE
  WHEN paused_position_ms IS NOT NULL THEN paused_position_ms
  WHEN started_at IS NOT NULL THEN greatest(0, floor(extract(epoch FROM ${clockAt(param)} - started_at) * 1000))::bigint
END`;
const playerColumns = (param: string) =>
  `channel_id, server_id, started_at, paused_position_ms, volume, version, ${positionMs(param)} AS position_ms`;
const TRACK_COLUMNS = 'id, url, title, requested_by, added_at';

/** Creates the channel's player when missing, then locks its row until the transaction ends. */
export async function lockPlayer(tx: Queryable, channelId: string, serverId: string): Promise<LockedPlayer> {
  await exec(tx, 'INSERT INTO players (channel_id, server_id) VALUES ($1, $2) ON CONFLICT (channel_id) DO NOTHING', [channelId, serverId]);
  const row = await one<PlayerRow>(
    tx,
    `SELECT ${playerColumns('$2')} FROM players WHERE channel_id = $1 FOR UPDATE`,
    [channelId, null],
    'Player',
  );
  return {
    channelId: row.channel_id,
    serverId: row.server_id,
    playing: row.started_at !== null,
    paused: row.paused_position_ms !== null,
    volume: row.volume,
  };
}

/** The whole state of a channel's player, or undefined when it never had one. */
export async function readPlayerState(db: Queryable, channelId: string, now: Clock): Promise<PlayerState | undefined> {
  const row = await maybeOne<PlayerRow>(db, `SELECT ${playerColumns('$2')} FROM players WHERE channel_id = $1`, [channelId, now]);
  if (!row) return undefined;
  const [current, ...queue] = (await listTracks(db, channelId)).map(toTrack);
  return {
    channelId: row.channel_id,
    serverId: row.server_id,
    current: current && row.started_at !== null ? { ...current, startedAt: row.started_at, positionMs: row.position_ms ?? 0 } : null,
    paused: row.paused_position_ms !== null,
    volume: row.volume,
    queue,
    version: row.version,
  };
}

async function listTracks(db: Queryable, channelId: string): Promise<TrackRow[]> {
  return many<TrackRow>(db, `SELECT ${TRACK_COLUMNS} FROM tracks WHERE channel_id = $1 ORDER BY seq`, [channelId]);
}

/** The first track of the queue: the one playing (or paused). */
export async function findCurrentTrack(db: Queryable, channelId: string): Promise<Track | undefined> {
  const row = await maybeOne<TrackRow>(db, `SELECT ${TRACK_COLUMNS} FROM tracks WHERE channel_id = $1 ORDER BY seq LIMIT 1`, [channelId]);
  return row && toTrack(row);
}

export async function countTracks(db: Queryable, channelId: string): Promise<number> {
  const row = await one<{ count: number }>(db, 'SELECT count(*)::int AS count FROM tracks WHERE channel_id = $1', [channelId]);
  return row.count;
}

export async function insertTrack(tx: Queryable, channelId: string, track: Omit<Track, 'addedAt'>): Promise<void> {
  await exec(tx, 'INSERT INTO tracks (id, channel_id, url, title, requested_by) VALUES ($1, $2, $3, $4, $5)', [
    track.id,
    channelId,
    track.url,
    track.title,
    track.requestedBy,
  ]);
}

export async function deleteTrack(tx: Queryable, trackId: string): Promise<void> {
  await exec(tx, 'DELETE FROM tracks WHERE id = $1', [trackId]);
}

export async function deleteAllTracks(tx: Queryable, channelId: string): Promise<void> {
  await exec(tx, 'DELETE FROM tracks WHERE channel_id = $1', [channelId]);
}

/** The (new) first track starts now, unpaused. */
export async function startCurrentTrack(tx: Queryable, channelId: string, now: Clock): Promise<void> {
  await exec(tx, `UPDATE players SET started_at = ${clockAt('$2')}, paused_position_ms = NULL WHERE channel_id = $1`, [channelId, now]);
}

/** Nothing is current any more. */
export async function markIdle(tx: Queryable, channelId: string): Promise<void> {
  await exec(tx, 'UPDATE players SET started_at = NULL, paused_position_ms = NULL WHERE channel_id = $1', [channelId]);
}

/** Freezes the position where it is now. */
export async function pauseCurrentTrack(tx: Queryable, channelId: string, now: Clock): Promise<void> {
  await exec(tx, `UPDATE players SET paused_position_ms = ${positionMs('$2')} WHERE channel_id = $1`, [channelId, now]);
}

/** Moves the start time forward by the pause, so that position = now - started_at holds again. */
export async function resumeCurrentTrack(tx: Queryable, channelId: string, now: Clock): Promise<void> {
  await exec(
    tx,
    `UPDATE players SET started_at = ${clockAt('$2')} - paused_position_ms * interval '1 millisecond', paused_position_ms = NULL
     WHERE channel_id = $1`,
    [channelId, now],
  );
}

export async function setVolume(tx: Queryable, channelId: string, volume: number): Promise<void> {
  await exec(tx, 'UPDATE players SET volume = $2 WHERE channel_id = $1', [channelId, volume]);
}

/** Every change bumps the version, so clients can order the events of one player. */
export async function markChanged(tx: Queryable, channelId: string): Promise<void> {
  await exec(tx, 'UPDATE players SET version = version + 1, updated_at = now() WHERE channel_id = $1', [channelId]);
}

function toTrack(row: TrackRow): Track {
  return { id: row.id, url: row.url, title: row.title, requestedBy: row.requested_by, addedAt: row.added_at };
}
