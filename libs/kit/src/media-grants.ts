import { AccessToken, RoomServiceClient, TrackSource, TwirpError } from 'livekit-server-sdk';
import { z } from 'zod';
import { env } from './config.ts';
import type { Logger } from './logger.ts';
import { type Periodic, repeatEvery } from './periodic.ts';

/**
 * Variables of a service that hands out media grants and manages the rooms (voice channels in
 * guilds, calls in social): where clients reach the media server (LiveKit) and the API key pair it
 * trusts. The defaults are LiveKit's development pair (`livekit-server --dev`); production sets its own.
 */
export const mediaGrantConfig = z.object({
  LIVEKIT_URL: z.url({ protocol: /^wss?$/, error: 'must be a ws:// or wss:// URL' }).default('ws://127.0.0.1:7880'),
  /**
   * Where the service reaches LiveKit's room API, when not where clients do (an in-cluster address
   * beside a public LIVEKIT_URL); LIVEKIT_URL when unset.
   */
  LIVEKIT_API_URL: z.url({ protocol: /^(https?|wss?)$/, error: 'must be an http(s):// or ws(s):// URL' }).optional(),
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
 * What a participant may do in a room. `canSubscribe` (hearing the others) defaults to true; only a
 * deafened voice member loses it. `canPublishSources` limits what `canPublish` allows (a voice
 * member without STREAM: the microphone only); left out, LiveKit lets a publisher publish every source.
 */
export interface MediaPermissions {
  canPublish: boolean;
  canPublishSources?: readonly PublishSource[];
  canSubscribe?: boolean;
}

export type IssueMediaGrant = (grant: { room: string; identity: string } & MediaPermissions) => Promise<MediaGrant>;

/** LiveKit's names for the permissions, as a token's grant and a connected participant's permission both take them. */
function liveKitPermissions({ canPublish, canPublishSources, canSubscribe = true }: MediaPermissions) {
  // LiveKit lets canPublishSources supersede canPublish: sources go only with a grant that may publish.
  const sources = canPublish && canPublishSources ? canPublishSources.map((s) => TRACK_SOURCES[s]) : undefined;
  return { canSubscribe, canPublish, canPublishData: canPublish, ...(sources && { canPublishSources: sources }) };
}

/**
 * LiveKit access tokens signed with the configured key pair (the official server SDK): identity
 * the user id, one room, subscribing unless told otherwise, publishing only when allowed (and only
 * the sources named, when named), expiring within minutes.
 */
export function mediaGrantIssuer(config: MediaGrantConfig): IssueMediaGrant {
  return async ({ room, identity, ...permissions }) => {
    const token = new AccessToken(config.LIVEKIT_API_KEY, config.LIVEKIT_API_SECRET, { identity, ttl: config.MEDIA_GRANT_TTL_SECONDS });
    token.addGrant({ room, roomJoin: true, ...liveKitPermissions(permissions) });
    return { url: config.LIVEKIT_URL, token: await token.toJwt() };
  };
}

/**
 * The media server's rooms as they are now, for what a grant cannot undo: a grant lets its holder
 * connect, and once connected they stay until they leave, whatever the grant's expiry. Each call
 * is done when there is nothing to do (the participant or room is not there), so it may be
 * repeated. A media server that refuses the connection has nobody connected to it (a single
 * LiveKit keeps its rooms in memory, so one that restarted has none): that is done too. Any other
 * failure (a timeout, a 5xx) throws, for the caller to try again.
 */
export interface MediaRooms {
  /** Disconnects the participant from the room. */
  remove(room: string, identity: string): Promise<void>;
  /** What a connected participant may do from now on (LiveKit unpublishes what they may no longer publish). */
  allow(room: string, identity: string, permissions: MediaPermissions): Promise<void>;
  /** Closes the room, disconnecting everyone in it. */
  close(room: string): Promise<void>;
  /**
   * Every open room with the identities of those connected to it; with `recentRemovals`, only the
   * rooms this client took someone out of (or closed) within REJOIN_WINDOW_MS, where a client taken
   * out may come back with what it kept.
   */
  occupied(options?: { recentRemovals?: boolean }): Promise<{ room: string; identities: string[] }[]>;
}

/**
 * How long a client taken out of a room may come back to it: LiveKit cannot revoke a token, and
 * refreshes a connected participant's every 5 minutes for 10, so what it kept lets it in for up to
 * 10 minutes (and a minute of clock skew) after it was taken out.
 */
export const REJOIN_WINDOW_MS = 11 * 60_000;

/** How long a call to the media server's API may take before it counts as failed (and is tried again). */
const ROOM_API_TIMEOUT_SECONDS = 10;

/** LiveKit's room API (Twirp over HTTP, the server SDK's client) at LIVEKIT_API_URL or LIVEKIT_URL, signed with its key pair. */
export function mediaRooms(config: MediaGrantConfig): MediaRooms {
  // Failover tries other regions of LiveKit Cloud hosts: a self-hosted server has none.
  const client = new RoomServiceClient(config.LIVEKIT_API_URL ?? config.LIVEKIT_URL, config.LIVEKIT_API_KEY, config.LIVEKIT_API_SECRET, {
    requestTimeout: ROOM_API_TIMEOUT_SECONDS,
    failover: false,
  });
  // Room name -> when someone was last taken out of it here.
  const removals = new Map<string, number>();
  const removedFrom = (room: string) => removals.set(room, Date.now());
  const recentlyEmptied = () => {
    for (const [room, at] of removals) if (Date.now() - at > REJOIN_WINDOW_MS) removals.delete(room);
    return [...removals.keys()];
  };
  return {
    // Marked first: a client that comes back at once is then already watched for.
    remove: (room, identity) => {
      removedFrom(room);
      return unlessAbsent(client.removeParticipant(room, identity));
    },
    allow: (room, identity, permissions) =>
      unlessAbsent(client.updateParticipant(room, identity, { permission: liveKitPermissions(permissions) })),
    close: (room) => {
      removedFrom(room);
      return unlessAbsent(client.deleteRoom(room));
    },
    occupied: async ({ recentRemovals = false } = {}) => {
      const names = recentRemovals ? recentlyEmptied() : (await orNothing(client.listRooms(), [])).map((r) => r.name);
      const listed = names.map(async (room) => ({
        room,
        identities: (await orNothing(client.listParticipants(room), [])).map((p) => p.identity),
      }));
      return (await Promise.all(listed)).filter((r) => r.identities.length > 0);
    },
  };
}

/** What a room call answers, or `none` when its target or its server is not there. */
async function orNothing<T>(call: Promise<T>, none: T): Promise<T> {
  try {
    return await call;
  } catch (err) {
    if (isAbsent(err)) return none;
    throw err;
  }
}

/** Settles a room call whose target is not there (404), or whose server is not running, as done. */
async function unlessAbsent(call: Promise<unknown>): Promise<void> {
  await orNothing(call, undefined);
}

const isAbsent = (err: unknown) => (err instanceof TwirpError && err.status === 404) || causeCode(err) === 'ECONNREFUSED';

/** The code of an error's cause (fetch wraps the socket's error in a TypeError). */
function causeCode(err: unknown): unknown {
  return (err as { cause?: { code?: unknown } } | undefined)?.cause?.code;
}

/** How often every room is checked, and how often the rooms someone was lately taken out of. */
const ROOM_CHECK_INTERVAL_MS = 30_000;
const RECENT_ROOM_CHECK_INTERVAL_MS = 2_000;

/**
 * Runs a service's room check (which takes out whoever is in one of its rooms without the right to
 * be) every 30 s over every room, and every 2 s over the rooms this replica took someone out of
 * within REJOIN_WINDOW_MS: a client taken out that connects again with what it kept is out again
 * within seconds, and a replica that took nobody out asks the media server nothing in between.
 */
export function checkRoomsPeriodically(
  check: (options: { recentRemovals: boolean }) => Promise<unknown>,
  log: Pick<Logger, 'warn'>,
  what: string,
): Periodic {
  const checks = [
    repeatEvery(ROOM_CHECK_INTERVAL_MS, () => check({ recentRemovals: false }), log, what),
    repeatEvery(RECENT_ROOM_CHECK_INTERVAL_MS, () => check({ recentRemovals: true }), log, `${what} of recent removals`),
  ];
  return {
    async stop() {
      await Promise.all(checks.map((c) => c.stop()));
    },
  };
}
