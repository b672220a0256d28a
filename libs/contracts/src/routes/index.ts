import type { RouteContract, ServiceName } from '../route.ts';
import { authRoutes } from './auth.ts';
import { gatewayRoutes } from './gateway.ts';
import { mediaRoutes } from './media.ts';
import { messagesRoutes } from './messages.ts';
import { musicRoutes } from './music.ts';
import { readStatesRoutes } from './read-states.ts';
import { searchRoutes } from './search.ts';
import { serversRoutes } from './servers.ts';
import { socialRoutes } from './social.ts';
import { voiceRoutes } from './voice.ts';

export { HealthReport } from './gateway.ts';
export { gamesRoutes, keysRoutes } from './social.ts';
export {
  authRoutes,
  gatewayRoutes,
  mediaRoutes,
  messagesRoutes,
  musicRoutes,
  readStatesRoutes,
  searchRoutes,
  serversRoutes,
  socialRoutes,
  voiceRoutes,
};

/** Every HTTP operation of the platform. */
export const ALL_ROUTES: RouteContract[] = [
  gatewayRoutes,
  authRoutes,
  serversRoutes,
  messagesRoutes,
  voiceRoutes,
  socialRoutes,
  readStatesRoutes,
  mediaRoutes,
  musicRoutes,
  searchRoutes,
].flatMap((area) => Object.values(area as Record<string, RouteContract>));

/**
 * Which service answers a path: the gateway proxies each prefix (DESIGN.md's route map) to the
 * service that owns the area.
 */
export const ROUTE_PREFIXES: Record<string, Exclude<ServiceName, 'gateway'>> = {
  '/v1/auth': 'auth',
  '/v1/users': 'auth',
  '/v1/badges': 'auth',
  '/v1/servers': 'guilds',
  '/v1/discovery': 'guilds',
  '/v1/channels': 'guilds',
  '/v1/invites': 'guilds',
  '/v1/join-requests': 'guilds',
  '/v1/voice': 'guilds',
  '/v1/webhooks': 'guilds',
  '/v1/friends': 'social',
  '/v1/dm': 'social',
  '/v1/calls': 'social',
  '/v1/keys': 'social',
  '/v1/games': 'social',
  '/v1/notifications': 'social',
  // Until the gateway routes by each contract's service: social's route under auth's prefix.
  '/v1/users/@me/activity': 'social',
  '/v1/media': 'media',
  '/v1/link-preview': 'media',
  '/v1/music': 'music',
};
