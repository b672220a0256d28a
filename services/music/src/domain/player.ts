import {
  DEFAULT_VOLUME,
  MAX_QUEUE_LENGTH,
  MUSIC_SUBJECTS,
  type PlayBody,
  type PlayerAction,
  type PlayerState,
  type PlayerTarget,
  type PlayerUpdatedEvent,
  type SkipBody,
  VoiceAccessRpc,
  type VolumeBody,
} from '@chat/contracts';
import { type Bus, conflict, enqueueEvent, type Pool, type Queryable, type RequestContext, requestRpc, withTx } from '@chat/kit';
import { v7 as uuidv7 } from 'uuid';
import * as players from '../db/players.ts';
import { assertCanControl, assertCanListen } from './access.ts';

export interface PlayerDeps {
  pool: Pool;
  bus: Bus;
  /** The player's clock; without one the database's clock is the time (tests pass one they move). */
  clock?: () => Date;
}

/** A change to a locked player, at `now`; answers false when there was nothing to change (no event then). */
type Change = (tx: Queryable, player: players.LockedPlayer, now: players.Clock) => Promise<boolean>;

const nowOf = (deps: PlayerDeps): players.Clock => deps.clock?.() ?? null;

/** The channel's player as a member of its server sees it; idle when nothing was ever played. */
export async function getPlayer(deps: PlayerDeps, ctx: RequestContext, channelId: string): Promise<PlayerState> {
  const access = await requestRpc(deps.bus, VoiceAccessRpc, { channelId, userId: ctx.userId }, { requestId: ctx.requestId });
  assertCanListen(access);
  return (await players.readPlayerState(deps.pool, channelId, nowOf(deps))) ?? idlePlayer(channelId, access.channel.serverId);
}

/** Enqueues a track; when the player is idle it becomes the current track at once. */
export function play(deps: PlayerDeps, ctx: RequestContext, body: PlayBody): Promise<PlayerState> {
  return control(deps, ctx, body, 'play', async (tx, player, now) => {
    if ((await players.countTracks(tx, body.channelId)) >= MAX_QUEUE_LENGTH) {
      throw conflict(`The queue is full (${MAX_QUEUE_LENGTH} tracks)`);
    }
    const track = { id: uuidv7(), url: body.url, title: body.title ?? body.url, requestedBy: ctx.userId };
    await players.insertTrack(tx, body.channelId, track);
    if (!player.playing) await players.startCurrentTrack(tx, body.channelId, now);
    return true;
  });
}

/**
 * Advances only when the client's url (and trackId, when given) is still the current track, so
 * that two people pressing skip on the same track skip it once: the second sees a stale track.
 */
export async function skip(deps: PlayerDeps, ctx: RequestContext, body: SkipBody): Promise<void> {
  await control(deps, ctx, body, 'skip', async (tx, _player, now) => {
    const current = await players.findCurrentTrack(tx, body.channelId);
    const stillCurrent = current && current.url === body.url && (body.trackId === undefined || body.trackId === current.id);
    if (!stillCurrent) throw conflict('That track is no longer playing');
    await players.deleteTrack(tx, current.id);
    const next = await players.findCurrentTrack(tx, body.channelId);
    await (next ? players.startCurrentTrack(tx, body.channelId, now) : players.markIdle(tx, body.channelId));
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

/** Stops the current track and clears the queue; the volume stays. */
export function stop(deps: PlayerDeps, ctx: RequestContext, target: PlayerTarget): Promise<PlayerState> {
  return control(deps, ctx, target, 'stop', async (tx, player) => {
    if (!player.playing) return false;
    await players.deleteAllTracks(tx, target.channelId);
    await players.markIdle(tx, target.channelId);
    return true;
  });
}

export function setVolume(deps: PlayerDeps, ctx: RequestContext, body: VolumeBody): Promise<PlayerState> {
  return control(deps, ctx, body, 'volume', async (tx, player) => {
    if (player.volume === body.volume) return false;
    await players.setVolume(tx, body.channelId, body.volume);
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
  target: PlayerTarget,
  action: PlayerAction,
  change: Change,
): Promise<PlayerState> {
  const access = await requestRpc(
    deps.bus,
    VoiceAccessRpc,
    { channelId: target.channelId, userId: ctx.userId },
    { requestId: ctx.requestId },
  );
  assertCanControl(access, ctx.userId, target);
  return withTx(deps.pool, async (tx) => {
    const player = await players.lockPlayer(tx, target.channelId, target.serverId);
    // Read after the lock: a control that waited for it happens when it gets it.
    const now = nowOf(deps);
    const changed = await change(tx, player, now);
    if (changed) await players.markChanged(tx, target.channelId);
    // lockPlayer created the row when it was missing, so there is a state to read.
    const state = (await players.readPlayerState(tx, target.channelId, now)) as PlayerState;
    if (changed) {
      const event: PlayerUpdatedEvent = { action, actorId: ctx.userId, player: state };
      await enqueueEvent(tx, MUSIC_SUBJECTS.playerUpdated, event, ctx.requestId);
    }
    return state;
  });
}

function assertPlaying(player: players.LockedPlayer): void {
  if (!player.playing) throw conflict('Nothing is playing');
}

function idlePlayer(channelId: string, serverId: string): PlayerState {
  return { channelId, serverId, current: null, paused: false, volume: DEFAULT_VOLUME, queue: [], version: 0 };
}
