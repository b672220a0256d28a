import type { Runtime, TokenVerifier } from '@chat/kit';
import type { MusicConfig } from './config.ts';

/** Everything the music service's routes, bus handlers and domain receive from main. */
export interface MusicDeps extends Runtime {
  config: MusicConfig;
  tokens: TokenVerifier;
  /** The player's clock; the system clock when absent (tests pass one they move by hand). */
  now?: () => Date;
}
