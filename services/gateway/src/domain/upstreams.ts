import { ROUTE_PREFIXES, type ServiceName } from '@chat/contracts';
import type { GatewayConfig } from '../config.ts';

export type Upstream = Exclude<ServiceName, 'gateway'>;

export function upstreamUrls(config: GatewayConfig): Record<Upstream, string> {
  return { auth: config.AUTH_URL, guilds: config.GUILDS_URL, social: config.SOCIAL_URL, media: config.MEDIA_URL, music: config.MUSIC_URL };
}

/** Each path prefix with the base URL of the service that owns it. */
export function proxyTargets(config: GatewayConfig): { prefix: string; service: Upstream; url: string }[] {
  const urls = upstreamUrls(config);
  return Object.entries(ROUTE_PREFIXES).map(([prefix, service]) => ({ prefix, service, url: urls[service] }));
}
