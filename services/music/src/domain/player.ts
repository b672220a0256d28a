import {
  DEFAULT_VOLUME,
  MAX_QUEUE_LENGTH,
  MUSIC_SUBJECTS,
  type PlayBody,
  type PlayerAction,
  type PlayerModesBody,
  type PlayerState,
  type PlayerTarget,
  type PlayerUpdatedEvent,
  type QueueBody,
  type SkipBody,
  VoiceAccessRpc,
  type VolumeBody,
} from '@chat/contracts';
import { type Bus, conflict, enqueueEvent, notFound, type Pool, type Queryable, type RequestContext, requestRpc, withTx } from '@chat/kit';
import type { Logger } from 'pino';
import { v7 as uuidv7 } from 'uuid';
import * as players from '../db/players.ts';
import { assertCanControl, assertCanListen } from './access.ts';
import { assertChannelNotDeleted } from './deletions.ts';
import { trackDurationMs } from './durations.ts';

export interface PlayerDeps {
  pool: Pool;
  bus: Bus;
  log?: Logger;
  /** The player's clock: what time it is for starts, pauses, resumes and positions (tests set it). */
  now?: () => Date;
}

/** What time it is for the player: its deps' clock, else the system's. */
export const clockOf = (deps: Pick<PlayerDeps, 'now'>): Date => deps.now?.() ?? new Date();

/**
 * A change to a locked player at `now` (read once the lock is held); answers false when there was
 * nothing to change (no event then).
 */
type Change = (tx: Queryable, player: players.LockedPlayer, now: Date) => Promise<boolean>;

/** The channel's player as a member of its server sees it; idle when nothing was ever played. */
export async function getPlayer(deps: PlayerDeps, ctx: RequestContext, channelId: string): Promise<PlayerState> {
  const access = await requestRpc(deps.bus, VoiceAccessRpc, { channelId, userId: ctx.userId }, { requestId: ctx.requestId });
  assertCanListen(access);
  return (await players.readPlayerState(deps.pool, channelId, clockOf(deps))) ?? idlePlayer(channelId, access.channel.serverId);
}

/**
 * Enqueues a track; when the player is idle it becomes the current track at once. A creating
 * request like queue: `once` runs the write (the route's Idempotency-Key), so a retry adds nothing.
 */
export async function play(
  deps: PlayerDeps,
  ctx: RequestContext,
  body: PlayBody,
  once: (write: () => Promise<PlayerState>) => Promise<PlayerState> = (write) => write(),
): Promise<PlayerState> {
  const durationMs = await trackDurationMs(deps, body, ctx.requestId);
  const access = await controlAccess(deps, ctx, body);
  return once(() =>
    applyControl(deps, ctx, access, body.channelId, 'play', async (tx, player, now) => {
      await enqueue(tx, ctx, body, durationMs);
      if (!player.playing) await players.startCurrentTrack(tx, body.channelId, now);
      return true;
    }),
  );
}

/** Adds a track at the end of the queue and never starts the player (POST /v1/music/queue). */
/**
 * Adds a track to the queue. What it asks other services (the track's length, the caller's access)
 * comes first; `once` runs the write that follows (the route's Idempotency-Key: writeOnce), so that
 * no database connection waits on those questions.
 */
export async function queue(
  deps: PlayerDeps,
  ctx: RequestContext,
  body: QueueBody,
  once: (write: () => Promise<PlayerState>) => Promise<PlayerState> = (write) => write(),
): Promise<PlayerState> {
  const durationMs = await trackDurationMs(deps, body, ctx.requestId);
  const access = await controlAccess(deps, ctx, body);
  return once(() =>
    applyControl(deps, ctx, access, body.channelId, 'queue', async (tx) => {
      await enqueue(tx, ctx, body, durationMs);
      return true;
    }),
  );
}

async function enqueue(tx: Queryable, ctx: RequestContext, body: QueueBody, durationMs: number | null): Promise<void> {
  if ((await players.countTracks(tx, body.channelId)) >= MAX_QUEUE_LENGTH) {
    throw conflict(`The queue is full (${MAX_QUEUE_LENGTH} tracks)`);
  }
  await players.insertTrack(tx, body.channelId, {
    id: uuidv7(),
    url: body.url,
    title: body.title ?? body.url,
    requestedBy: ctx.userId,
    durationMs,
  });
}

/** Removes one upcoming track; the current one is skipped, not removed. While idle, every queued track is upcoming. */
export async function removeQueueItem(deps: PlayerDeps, ctx: RequestContext, channelId: string, itemId: string): Promise<void> {
  await control(deps, ctx, { channelId }, 'remove', async (tx, player) => {
    const track = await players.findQueuedTrack(tx, channelId, itemId);
    if (!track) throw notFound('Queue item');
    if (player.playing && (await players.findCurrentTrack(tx, channelId))?.id === itemId) throw conflict('That track is playing: skip it');
    await players.deleteTrack(tx, itemId);
    return true;
  });
}

/** Sets any of volume, loop and shuffle (no change, no event, when they already are so). */
export function setModes(deps: PlayerDeps, ctx: RequestContext, channelId: string, body: PlayerModesBody): Promise<PlayerState> {
  return control(deps, ctx, { channelId }, 'modes', async (tx, player) => {
    const changes = (key: 'volume' | 'loop' | 'shuffle') => body[key] !== undefined && body[key] !== player[key];
    const changed = changes('volume') || changes('loop') || changes('shuffle');
    if (changed) await players.setModes(tx, channelId, body);
    return changed;
  });
}

/**
 * Advances only when the client's url (and trackId, when given) is still the current track, so
 * that two people pressing skip on the same track skip it once: the second sees a stale track.
 */
export async function skip(deps: PlayerDeps, ctx: RequestContext, body: SkipBody): Promise<void> {
  await control(deps, ctx, body, 'skip', async (tx, player, now) => {
    // While idle nothing is current, though tracks may be queued: a skip must not start them.
    const current = player.playing ? await players.findCurrentTrack(tx, body.channelId) : undefined;
    const stillCurrent = current && current.url === body.url && (body.trackId === undefined || body.trackId === current.id);
    if (!stillCurrent) throw conflict('That track is no longer playing');
    await advanceQueue(tx, player, { endedBy: 'skip', at: now });
    return true;
  });
}

export function pause(deps: PlayerDeps, ctx: RequestContext, target: PlayerTarget): Promise<PlayerState> {
  return control(deps, ctx, target, 'pause', async (tx, player, now) => {
    assertPlaying(player);
    if (player.paused) return false;
    await players.pauseCurrentTrack(tx, target.channelId, now);
    return true;
  });
}

export function resume(deps: PlayerDeps, ctx: RequestContext, target: PlayerTarget): Promise<PlayerState> {
  return control(deps, ctx, target, 'resume', async (tx, player, now) => {
    assertPlaying(player);
    if (!player.paused) return false;
    await players.resumeCurrentTrack(tx, target.channelId, now);
    return true;
  });
}

/** Stops the current track and clears the queue, also one queued while idle; the volume stays. */
export function stop(deps: PlayerDeps, ctx: RequestContext, target: PlayerTarget): Promise<PlayerState> {
  return control(deps, ctx, target, 'stop', async (tx, player) => {
    if (!player.playing && (await players.countTracks(tx, target.channelId)) === 0) return false;
    await players.deleteAllTracks(tx, target.channelId);
    await players.markIdle(tx, target.channelId);
    return true;
  });
}

export function setVolume(deps: PlayerDeps, ctx: RequestContext, body: VolumeBody): Promise<PlayerState> {
  return control(deps, ctx, body, 'volume', async (tx, player) => {
    if (player.volume === body.volume) return false;
    await players.setModes(tx, body.channelId, { volume: body.volume });
    return true;
  });
}

/**
 * The one path of every control: guilds says who may, then the change runs under the player's
 * row lock (so replicas serialise on the database, not in memory), and a change commits with its
 * version bump and its music.player.updated event.
 */
async function control(
  deps: PlayerDeps,
  ctx: RequestContext,
  target: { channelId: string; serverId?: string },
  action: PlayerAction,
  change: Change,
): Promise<PlayerState> {
  return applyControl(deps, ctx, await controlAccess(deps, ctx, target), target.channelId, action, change);
}

/** The caller's access to the voice channel, asked of guilds; refused unless they may control its player. */
async function controlAccess(deps: PlayerDeps, ctx: RequestContext, target: { channelId: string; serverId?: string }) {
  const access = await requestRpc(
    deps.bus,
    VoiceAccessRpc,
    { channelId: target.channelId, userId: ctx.userId },
    { requestId: ctx.requestId },
  );
  assertCanControl(access, ctx.userId, target);
  return access;
}

/** The change under the player's row lock; an actual change bumps the version and publishes the player. */
function applyControl(
  deps: PlayerDeps,
  ctx: RequestContext,
  access: { channel: { serverId: string } },
  channelId: string,
  action: PlayerAction,
  change: Change,
): Promise<PlayerState> {
  return withTx(deps.pool, async (tx) => {
    // Guilds answered before this transaction: the channel may have been deleted since.
    await assertChannelNotDeleted(tx, channelId, access.channel.serverId);
    const player = await players.lockPlayer(tx, channelId, access.channel.serverId);
    const now = clockOf(deps);
    const changed = await change(tx, player, now);
    return changed ? commitChange(tx, channelId, action, ctx.userId, now, ctx.requestId) : readState(tx, channelId, now);
  });
}

/** After a change under the lock: the clock's next end, the version, and the event with the whole player. */
export async function commitChange(
  tx: Queryable,
  channelId: string,
  action: PlayerAction,
  actorId: string,
  now: Date,
  requestId?: string,
): Promise<PlayerState> {
  await players.refreshEndsAt(tx, channelId);
  await players.markChanged(tx, channelId);
  const state = await readState(tx, channelId, now);
  const event: PlayerUpdatedEvent = { action, actorId, player: state };
  await enqueueEvent(tx, MUSIC_SUBJECTS.playerUpdated, event, requestId);
  return state;
}

// lockPlayer created the row when it was missing, so there is a state to read.
const readState = async (tx: Queryable, channelId: string, now: Date) => (await players.readPlayerState(tx, channelId, now)) as PlayerState;

/**
 * Moves past the current track, by a skip or because it ended (`at`: when it ended, so the next
 * one starts exactly then; for a skip, now). Track loop replays an ended track; queue loop puts the
 * finished track back at the end; shuffle picks the next one at random.
 */
export async function advanceQueue(
  tx: Queryable,
  player: players.LockedPlayer,
  how: { endedBy: 'skip' | 'clock'; at: Date },
): Promise<void> {
  const { channelId } = player;
  const current = await players.findCurrentTrack(tx, channelId);
  if (!current) return players.markIdle(tx, channelId);
  if (how.endedBy === 'clock' && player.loop === 'track') return players.startCurrentTrack(tx, channelId, how.at);
  if (player.loop === 'queue') await players.moveTrackToBack(tx, channelId, current.id);
  else await players.deleteTrack(tx, current.id);
  if (player.shuffle) {
    const pick = await players.randomTrack(tx, channelId, current.id);
    if (pick) await players.moveTrackToFront(tx, channelId, pick);
  }
  const next = await players.findCurrentTrack(tx, channelId);
  await (next ? players.startCurrentTrack(tx, channelId, how.at) : players.markIdle(tx, channelId));
}

function assertPlaying(player: players.LockedPlayer): void {
  if (!player.playing) throw conflict('Nothing is playing');
}

function idlePlayer(channelId: string, serverId: string): PlayerState {
  return { channelId, serverId, current: null, paused: false, volume: DEFAULT_VOLUME, queue: [], version: 0, loop: 'off', shuffle: false };
}
