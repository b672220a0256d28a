import { AccessToken, TrackSource } from 'livekit-server-sdk';
import { z } from 'zod';
import { env } from './config.ts';

/**
 * Variables of a service that hands out media grants (voice channels in guilds, calls in social):
 * where clients reach the media server (LiveKit) and the API key pair it trusts. The defaults are
 * LiveKit's development pair (`livekit-server --dev`); production sets its own.
 */
export const mediaGrantConfig = z.object({
  LIVEKIT_URL: z.url({ protocol: /^wss?$/, error: 'must be a ws:// or wss:// URL' }).default('ws://127.0.0.1:7880'),
  LIVEKIT_API_KEY: z.string().min(1).default('devkey'),
  LIVEKIT_API_SECRET: z.string().min(1).default('secret'),
  /** How long a grant may be used to connect; a client asks for a new one after that. */
  MEDIA_GRANT_TTL_SECONDS: env.int(300).pipe(z.number().int().min(30).max(3600)),
});
export type MediaGrantConfig = z.output<typeof mediaGrantConfig>;

/** What a client needs to carry audio: the media server's url and a token for one room. */
export interface MediaGrant {
  url: string;
  token: string;
}

/** What a participant may publish, by LiveKit's names of track sources. */
export type PublishSource = 'camera' | 'microphone' | 'screen_share' | 'screen_share_audio';

const TRACK_SOURCES: Readonly<Record<PublishSource, TrackSource>> = {
  camera: TrackSource.CAMERA,
  microphone: TrackSource.MICROPHONE,
  screen_share: TrackSource.SCREEN_SHARE,
  screen_share_audio: TrackSource.SCREEN_SHARE_AUDIO,
};

/**
 * `canSubscribe` (hearing the others) defaults to true; only a deafened voice member loses it.
 * `canPublishSources` limits what `canPublish` allows (a voice member without STREAM: the
 * microphone only); left out, LiveKit lets a publisher publish every source.
 */
export type IssueMediaGrant = (grant: {
  room: string;
  identity: string;
  canPublish: boolean;
  canPublishSources?: readonly PublishSource[];
  canSubscribe?: boolean;
}) => Promise<MediaGrant>;

/**
 * LiveKit access tokens signed with the configured key pair (the official server SDK): identity
 * the user id, one room, subscribing unless told otherwise, publishing only when allowed (and only
 * the sources named, when named), expiring within minutes.
 */
export function mediaGrantIssuer(config: MediaGrantConfig): IssueMediaGrant {
  return async ({ room, identity, canPublish, canPublishSources, canSubscribe = true }) => {
    const token = new AccessToken(config.LIVEKIT_API_KEY, config.LIVEKIT_API_SECRET, { identity, ttl: config.MEDIA_GRANT_TTL_SECONDS });
    // LiveKit lets canPublishSources supersede canPublish: sources go only with a grant that may publish.
    const sources = canPublish && canPublishSources && { canPublishSources: canPublishSources.map((s) => TRACK_SOURCES[s]) };
    token.addGrant({ room, roomJoin: true, canSubscribe, canPublish, canPublishData: canPublish, ...sources });
    return { url: config.LIVEKIT_URL, token: await token.toJwt() };
  };
}
