import { z } from 'zod';
import { hasNoHiddenUrlCharacter, Id, shownName, Timestamp } from './common.ts';

/** Schemas of the music area: request bodies, player state, events. */

/** How many tracks one player holds (current included); more is a 409. */
export const MAX_QUEUE_LENGTH = 100;
export const DEFAULT_VOLUME = 100;

const HTTP_URL = /^https?:\/\/[^/]/i;

/**
 * Only http(s) with a host: the audio worker fetches it, so no `file:`, `javascript:` or other
 * schemes. It is shown as the title of a track queued without one, so it holds no whitespace,
 * control or format character (a bidi override makes `…\u202Egpj.mp3` read as `…3pm.jpg`); checked
 * on the string as sent, since URL parsers drop tabs and line breaks before anyone sees them.
 */
export const TrackUrl = z
  .string()
  .max(2048)
  .refine(hasNoHiddenUrlCharacter, 'must not contain whitespace, control or format characters')
  .refine((value) => HTTP_URL.test(value) && URL.canParse(value), 'must be an http or https URL')
  .meta({ format: 'uri' });

/** The voice channel a control applies to, and the server the client believes it belongs to. */
export const PlayerTarget = z.object({ channelId: Id, serverId: Id });
export type PlayerTarget = z.infer<typeof PlayerTarget>;

/**
 * The longest length a track (or an audio file) is taken to have: 24 hours. A client gives at
 * most this; a length read from a file past it is treated as unknown, since only a crafted header
 * claims more (and milliseconds past 2^53 would break the contract of `Track.durationMs`).
 */
export const MAX_TRACK_SECONDS = 86_400;

/** A track's length in whole seconds, when the client knows it (up to MAX_TRACK_SECONDS). */
const DurationSeconds = z.number().int().min(1).max(MAX_TRACK_SECONDS);

export const PlayBody = PlayerTarget.extend({
  url: TrackUrl,
  /** Shown in the queue as every name is (one line, visible); the url when missing. */
  title: shownName(1, 200).optional(),
  /**
   * With a duration the track ends by itself and the next one starts. A file uploaded through
   * media needs none: its length is read from the file.
   */
  durationSeconds: DurationSeconds.optional(),
});
export type PlayBody = z.infer<typeof PlayBody>;

export const SkipBody = PlayerTarget.extend({
  /** The track the client sees playing: the skip happens only if it still is. */
  url: TrackUrl,
  /** Narrows the match to one queue entry when the same url is queued twice in a row. */
  trackId: Id.optional(),
});
export type SkipBody = z.infer<typeof SkipBody>;

/** 100 is as loud as the track itself; 200 doubles it. */
const Volume = z.number().int().min(0).max(200);

export const VolumeBody = PlayerTarget.extend({ volume: Volume });
export type VolumeBody = z.infer<typeof VolumeBody>;

/** POST /v1/music/queue: the same fields as play, but it never starts the player. */
export const QueueBody = PlayBody;
export type QueueBody = z.infer<typeof QueueBody>;

/** `off`; `track` replays the current track; `queue` puts each finished track back at the end. */
export const LoopMode = z.enum(['off', 'track', 'queue']);
export type LoopMode = z.infer<typeof LoopMode>;

/** PATCH /v1/music/{channelId}: any of the volume (as POST /v1/music/volume sets it), loop and shuffle. */
export const PlayerModesBody = z
  .object({ volume: Volume.optional(), loop: LoopMode.optional(), shuffle: z.boolean().optional() })
  .refine((b) => b.volume !== undefined || b.loop !== undefined || b.shuffle !== undefined, { error: 'give volume, loop or shuffle' });
export type PlayerModesBody = z.infer<typeof PlayerModesBody>;

export const QueueItemParams = z.object({ channelId: Id, itemId: Id });

export const Track = z
  .object({
    id: Id,
    url: z.string(),
    title: z.string(),
    requestedBy: Id,
    addedAt: Timestamp,
    /** Its length, when known: then it ends by itself. */
    durationMs: z.number().int().min(1).nullable(),
  })
  .meta({ id: 'Track' });
export type Track = z.infer<typeof Track>;

export const CurrentTrack = Track.extend({
  /** When the track would have started had it never paused: while playing, position = now - startedAt. */
  startedAt: Timestamp,
  /** Milliseconds into the track when this state was read (frozen while paused). */
  positionMs: z.number().int().min(0),
}).meta({ id: 'CurrentTrack' });
export type CurrentTrack = z.infer<typeof CurrentTrack>;

export const PlayerState = z
  .object({
    channelId: Id,
    serverId: Id,
    current: CurrentTrack.nullable(),
    paused: z.boolean(),
    volume: Volume,
    /** Upcoming tracks in play order, the current one excluded. */
    queue: z.array(Track),
    /** Grows by one with every change, so a client can drop an event older than what it has. */
    version: z.number().int().min(0),
    loop: LoopMode,
    shuffle: z.boolean(),
  })
  .meta({ id: 'MusicPlayerState' });
export type PlayerState = z.infer<typeof PlayerState>;

/** What changed a player; `ended` is the clock: the current track reached its end. */
export const PlayerAction = z.enum(['play', 'skip', 'pause', 'resume', 'stop', 'volume', 'queue', 'remove', 'modes', 'ended']);
export type PlayerAction = z.infer<typeof PlayerAction>;

/** Payload of `music.player.updated`: the state after the change, what changed it and who. */
export const PlayerUpdatedEvent = z.object({
  action: PlayerAction,
  /** Who changed it; for `ended`, the user who queued the track that ended. */
  actorId: Id,
  player: PlayerState,
});
export type PlayerUpdatedEvent = z.infer<typeof PlayerUpdatedEvent>;

export const MUSIC_SUBJECTS = { playerUpdated: 'music.player.updated' } as const;
