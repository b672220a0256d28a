import type { Runtime, TokenVerifier } from '@chat/kit';
import type { GuildsConfig } from './config.ts';

/** Everything the guilds service's routes, bus handlers and domain receive from main. */
export interface GuildsDeps extends Runtime {
  config: GuildsConfig;
  tokens: TokenVerifier;
}
