import { ROUTE_PREFIXES, type RouteContract, type ServiceName } from '@chat/contracts';
import type { GatewayConfig } from './config.ts';

export type Upstream = Exclude<ServiceName, 'gateway'>;

export function upstreamUrls(config: GatewayConfig): Record<Upstream, string> {
  return { auth: config.AUTH_URL, guilds: config.GUILDS_URL, social: config.SOCIAL_URL, media: config.MEDIA_URL, music: config.MUSIC_URL };
}

/**
 * Each path prefix with the base URL of the service that owns it: the prefix map, and the first
 * segment of every contract's path that the map does not name (a new area reaches its service
 * before anyone edits the map). Within a prefix, a request goes to its contract's service.
 */
export function proxyTargets(config: GatewayConfig, routes: RouteContract[]): { prefix: string; service: Upstream; url: string }[] {
  const urls = upstreamUrls(config);
  const owners = new Map<string, Upstream>(Object.entries(ROUTE_PREFIXES));
  for (const route of routes) {
    const prefix = /^\/v1\/[^/]+/.exec(route.path)?.[0];
    if (prefix && route.service !== 'gateway' && !owners.has(prefix) && !prefix.includes(':')) owners.set(prefix, route.service);
  }
  return [...owners].map(([prefix, service]) => ({ prefix, service, url: urls[service] }));
}
