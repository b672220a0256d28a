import { AccessToken, type ParticipantPermission, RoomServiceClient, TrackSource, TwirpError } from 'livekit-server-sdk';
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

const SOURCE_NAMES = Object.fromEntries(Object.entries(TRACK_SOURCES).map(([name, source]) => [source, name])) as Record<
  TrackSource,
  PublishSource
>;

/** What a connected participant may do, as LiveKit reports it (no sources named: every source). */
function fromLiveKit(permission: ParticipantPermission | undefined): MediaPermissions {
  const sources = (permission?.canPublishSources ?? []).map((s) => SOURCE_NAMES[s]);
  return {
    canPublish: permission?.canPublish ?? false,
    canSubscribe: permission?.canSubscribe ?? false,
    ...(sources.length > 0 && { canPublishSources: sources }),
  };
}

/** Whether the permissions allow less than everything a grant can (hearing, and publishing every source). */
const isRestricted = (p: MediaPermissions) => !samePermissions(p, { canPublish: true });

/** Whether two sets of permissions let a participant do the same (sources in any order). */
export function samePermissions(a: MediaPermissions, b: MediaPermissions): boolean {
  const canonical = (p: MediaPermissions) => {
    const { canPublishSources, ...rest } = liveKitPermissions(p);
    return JSON.stringify({ ...rest, sources: canPublishSources?.toSorted() ?? 'all' });
  };
  return canonical(a) === canonical(b);
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
   * Every open room with someone connected to it, and what each may do there; with
   * `recentChanges`, only the rooms where this client took someone out, gave someone less than
   * everything, or closed the room, within the rejoin window (rejoinWindowMs): there, a client may
   * come back with a token it kept, which lets it in with what it allowed then. With `rooms`, only those.
   */
  occupied(options?: { recentChanges?: boolean; rooms?: readonly string[] }): Promise<{ room: string; occupants: Occupant[] }[]>;
}

/** Someone connected to a room, and what they may do there now. */
export interface Occupant {
  identity: string;
  permissions: MediaPermissions;
}

/**
 * How long a client may connect with a token it kept: LiveKit cannot revoke one, and refreshes a
 * connected participant's every 5 minutes for 10; a grant lasts MEDIA_GRANT_TTL_SECONDS. A minute
 * more for clock skew.
 */
export const rejoinWindowMs = (config: Pick<MediaGrantConfig, 'MEDIA_GRANT_TTL_SECONDS'>): number =>
  Math.max(config.MEDIA_GRANT_TTL_SECONDS * 1_000, 10 * 60_000) + 60_000;

/** How long a call to the media server's API may take before it counts as failed (and is tried again). */
const ROOM_API_TIMEOUT_SECONDS = 10;
/** How many rooms `occupied` asks the media server about at once. */
const ROOMS_LISTED_AT_ONCE = 16;

/** LiveKit's room API (Twirp over HTTP, the server SDK's client) at LIVEKIT_API_URL or LIVEKIT_URL, signed with its key pair. */
export function mediaRooms(config: MediaGrantConfig): MediaRooms {
  // Failover tries other regions of LiveKit Cloud hosts: a self-hosted server has none.
  const client = new RoomServiceClient(config.LIVEKIT_API_URL ?? config.LIVEKIT_URL, config.LIVEKIT_API_KEY, config.LIVEKIT_API_SECRET, {
    requestTimeout: ROOM_API_TIMEOUT_SECONDS,
    failover: false,
  });
  // Room name -> when this client last changed who is in it or what they may do (watched until the rejoin window ends).
  const changed = new Map<string, number>();
  const rejoinMs = rejoinWindowMs(config);
  const watchIf = (changedHere: boolean, room: string) => {
    if (changedHere) changed.set(room, Date.now());
  };
  const watched = () => {
    for (const [room, at] of changed) if (Date.now() - at > rejoinMs) changed.delete(room);
    return [...changed.keys()];
  };
  return {
    remove: async (room, identity) => watchIf(await succeeded(client.removeParticipant(room, identity)), room),
    // Only a restriction needs watching: a kept token never allows more than everything. A member
    // toggling their own mute, or unmuted, leaves the room unwatched.
    allow: async (room, identity, permissions) => {
      const done = await succeeded(client.updateParticipant(room, identity, { permission: liveKitPermissions(permissions) }));
      watchIf(done && isRestricted(permissions), room);
    },
    close: async (room) => watchIf(await succeeded(client.deleteRoom(room)), room),
    occupied: async ({ recentChanges = false, rooms } = {}) => {
      const names = rooms ?? (recentChanges ? watched() : (await orNothing(client.listRooms(), [])).map((r) => r.name));
      const occupantsOf = async (room: string) => ({
        room,
        occupants: (await orNothing(client.listParticipants(room), [])).map((p) => ({
          identity: p.identity,
          permissions: fromLiveKit(p.permission),
        })),
      });
      // A few rooms at a time: a media server with thousands of rooms is not sent thousands of requests at once.
      const listed: Awaited<ReturnType<typeof occupantsOf>>[] = [];
      for (let i = 0; i < names.length; i += ROOMS_LISTED_AT_ONCE) {
        listed.push(...(await Promise.all(names.slice(i, i + ROOMS_LISTED_AT_ONCE).map(occupantsOf))));
      }
      return listed.filter((r) => r.occupants.length > 0);
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

/** Settles a room call whose target is not there (404), or whose server is not running, as done; answers whether it did something. */
function succeeded(call: Promise<unknown>): Promise<boolean> {
  return orNothing(
    call.then(() => true),
    false,
  );
}

const isAbsent = (err: unknown) => (err instanceof TwirpError && err.status === 404) || causeCode(err) === 'ECONNREFUSED';

/** The code of an error's cause (fetch wraps the socket's error in a TypeError). */
function causeCode(err: unknown): unknown {
  return (err as { cause?: { code?: unknown } } | undefined)?.cause?.code;
}

/** How often every room is checked, and how often the rooms changed lately. */
const ROOM_CHECK_INTERVAL_MS = 30_000;
const RECENT_ROOM_CHECK_INTERVAL_MS = 1_000;

/**
 * Runs a service's room check (which brings whoever is in one of its rooms in line with what they
 * may do there, or takes them out) every 30 s over every room, and every second over the rooms this
 * replica changed within the rejoin window (see MediaRooms.occupied): a client that connects again
 * with a token it kept is brought back in line about as soon as its media could flow, and a replica
 * that changed nothing asks the media server nothing in between.
 */
export function checkRoomsPeriodically(
  check: (options: { recentChanges: boolean }) => Promise<unknown>,
  log: Pick<Logger, 'warn'>,
  what: string,
): Periodic {
  const checks = [
    repeatEvery(ROOM_CHECK_INTERVAL_MS, () => check({ recentChanges: false }), log, what),
    repeatEvery(RECENT_ROOM_CHECK_INTERVAL_MS, () => check({ recentChanges: true }), log, `${what} of recent changes`),
  ];
  return {
    async stop() {
      await Promise.all(checks.map((c) => c.stop()));
    },
  };
}
