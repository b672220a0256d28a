import type { Runtime, TokenVerifier } from '@chat/kit';
import type { AuthConfig } from './config.ts';

/** Everything the auth service's routes, bus handlers and domain receive from main. */
export interface AuthDeps extends Runtime {
  config: AuthConfig;
  tokens: TokenVerifier;
}
