import { MEDIA_RPC, MediaFileReply, mediaIdFromUrl } from '@chat/contracts';
import { type Bus, requestRpc } from '@chat/kit';
import type { Logger } from 'pino';

/**
 * A track's length in milliseconds: the one the client gave, else, for a file uploaded through
 * media, the one media read from the file; null when neither knows (the track then plays until
 * someone skips it). Media being away only means an unknown length, never a failed play.
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
    const file = MediaFileReply.parse(await requestRpc<unknown>(deps.bus, MEDIA_RPC.fileGet, { id: mediaId }, { requestId }));
    return file.durationSeconds ? Math.round(file.durationSeconds * 1000) : null;
  } catch (err) {
    deps.log?.warn({ err, mediaId }, 'could not read the duration of an uploaded track');
    return null;
  }
}
