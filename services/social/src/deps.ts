import type { Runtime, TokenVerifier } from '@chat/kit';
import type { SocialConfig } from './config.ts';

/** Everything the social service's routes, bus handlers and domain receive from main. */
export interface SocialDeps extends Runtime {
  config: SocialConfig;
  tokens: TokenVerifier;
  /** The time rules read (rate windows, activity start); tests inject their own. */
  clock?: () => Date;
}
