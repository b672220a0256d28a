import type { Runtime, TokenVerifier } from '@chat/kit';
import type { AuthConfig } from './config.ts';
import type { SigningKeys } from './domain/keys.ts';
import type { Mailer } from './domain/mailer.ts';

/** Everything the auth service's routes, bus handlers and domain receive from main. */
export interface AuthDeps extends Runtime {
  config: AuthConfig;
  /** Verifies access tokens with auth's own key set. */
  tokens: TokenVerifier;
  keys: SigningKeys;
  mailer: Mailer;
}

/** What the domain functions need. */
export type AuthDomainDeps = Pick<AuthDeps, 'pool' | 'config' | 'keys' | 'mailer' | 'log'>;
