import { z } from 'zod';
import { Empty, Id } from '../common.ts';
import { PlayBody, PlayerModesBody, PlayerState, PlayerTarget, QueueBody, QueueItemParams, SkipBody, VolumeBody } from '../music.ts';
import { defineRoute } from '../route.ts';

/** Outcomes every music control shares: who may control is asked of guilds. */
const CONTROL_ERRORS = {
  400: 'Invalid input, or the channel is a text channel',
  403: 'Not in the voice channel, or music is locked there and the caller is neither its owner nor may manage channels',
  404: 'Unknown channel, not visible to the caller, or not in that server',
  502: 'The guilds service answered something unexpected',
  503: 'The guilds service (who may control) is unavailable',
  504: 'The guilds service did not answer in time',
} as const;

const control = <B extends z.ZodType>(action: string, summary: string, body: B, errors: Record<number, string> = {}) =>
  defineRoute({
    method: 'POST',
    path: `/v1/music/${action}`,
    service: 'music',
    summary,
    body,
    status: 200,
    response: PlayerState,
    errors: { ...CONTROL_ERRORS, ...errors },
  });

export const musicRoutes = {
  play: control('play', 'Enqueue a track; it plays at once when the player is idle', PlayBody, { 409: 'The queue is full' }),
  skip: defineRoute({
    method: 'POST',
    path: '/v1/music/skip',
    service: 'music',
    summary: 'Skip the current track, only if it is still the one named by url (and trackId when given)',
    body: SkipBody,
    status: 200,
    response: Empty,
    errors: { ...CONTROL_ERRORS, 409: 'That track is no longer playing (a stale skip)' },
  }),
  pause: control('pause', 'Pause the current track (no change when already paused)', PlayerTarget, { 409: 'Nothing is playing' }),
  resume: control('resume', 'Resume the current track (no change when not paused)', PlayerTarget, { 409: 'Nothing is playing' }),
  stop: control('stop', 'Stop playing and clear the queue', PlayerTarget),
  volume: control('volume', 'Set the volume, 0 to 200', VolumeBody),
  queue: defineRoute({
    method: 'POST',
    path: '/v1/music/queue',
    service: 'music',
    summary: 'Add a track to the end of the queue without starting the player',
    body: QueueBody,
    status: 201,
    response: PlayerState,
    errors: { ...CONTROL_ERRORS, 409: 'The queue is full' },
  }),
  removeQueueItem: defineRoute({
    method: 'DELETE',
    path: '/v1/music/:channelId/queue/:itemId',
    service: 'music',
    summary: 'Remove one upcoming track from the queue (the current one is skipped, not removed)',
    params: QueueItemParams,
    status: 204,
    response: null,
    errors: { ...CONTROL_ERRORS, 404: 'Unknown channel or no such upcoming track', 409: 'That track is playing: skip it' },
  }),
  modes: defineRoute({
    method: 'PATCH',
    path: '/v1/music/:channelId',
    service: 'music',
    summary: 'Set the volume (0-200), loop (off, track, queue) and shuffle',
    params: z.object({ channelId: Id }),
    body: PlayerModesBody,
    status: 200,
    response: PlayerState,
    errors: CONTROL_ERRORS,
  }),
  state: defineRoute({
    method: 'GET',
    path: '/v1/music/:channelId',
    service: 'music',
    summary: "A voice channel's player: current track, queue, paused, volume (idle when nothing was ever played)",
    params: z.object({ channelId: Id }),
    status: 200,
    response: PlayerState,
    errors: {
      400: 'Not a UUID, or a text channel',
      404: CONTROL_ERRORS[404],
      502: CONTROL_ERRORS[502],
      503: CONTROL_ERRORS[503],
      504: CONTROL_ERRORS[504],
    },
  }),
};
