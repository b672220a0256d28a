import { MAX_TRACK_SECONDS, MediaFileRpc, mediaIdFromUrl } from '@chat/contracts';
import { type Bus, requestRpc } from '@chat/kit';
import type { Logger } from 'pino';

/**
 * The shortest length a track has, as for a length the client gives (whole seconds, at least one).
 * A shorter file (a blip, a one-sample WAV) still has a length, and a known one keeps the queue
 * moving; counting it as a second keeps `duration_ms > 0` and lets a looping track end at most once
 * a second rather than on every round of the clock.
 */
export const MIN_TRACK_MS = 1_000;

/**
 * A track's length in milliseconds: the one the client gave, else, for a file uploaded through
 * media, the one media read from the file (at least MIN_TRACK_MS); null when neither knows (the
 * track then plays until someone skips it). Media being away, or answering a length no track has
 * (see fromMedia), only means an unknown length, never a failed play.
 */
export async function trackDurationMs(
  deps: { bus: Bus; log?: Logger },
  track: { url: string; durationSeconds?: number | undefined },
  requestId?: string,
): Promise<number | null> {
  if (track.durationSeconds !== undefined) return track.durationSeconds * 1000;
  const mediaId = mediaIdFromUrl(track.url);
  if (!mediaId) return null;
  try {
    const file = await requestRpc(deps.bus, MediaFileRpc, { id: mediaId }, { requestId });
    return fromMedia(file.durationSeconds);
  } catch (err) {
    deps.log?.warn({ err, mediaId }, 'could not read the duration of an uploaded track');
    return null;
  }
}

/**
 * The length media read from a file, in milliseconds. Media recorded whatever a header claimed
 * before it checked (records of a crafted file say 10^13 s or 2^62 s, whose milliseconds pass
 * 2^53 and PostgreSQL's bigint), so a length over the longest a client may give
 * (MAX_TRACK_SECONDS) is unknown here too.
 */
function fromMedia(seconds: number | null): number | null {
  if (seconds === null || !Number.isFinite(seconds) || seconds > MAX_TRACK_SECONDS) return null;
  return Math.max(MIN_TRACK_MS, Math.round(seconds * 1000));
}
