import type { Runtime, TokenVerifier } from '@chat/kit';
import type { MediaConfig } from './config.ts';
import type { SafeFetch } from './domain/safe-fetch.ts';
import type { ObjectStore } from './storage.ts';

/** Everything the media service's routes, bus handlers and domain receive from main. */
export interface MediaDeps extends Runtime {
  config: MediaConfig;
  tokens: TokenVerifier;
  storage: ObjectStore;
  /** The clock of quotas, upload times and the sweeper (tests move it instead of waiting). */
  now: () => Date;
  /** The SSRF-safe fetcher of link previews (tests inject a resolver and connector). */
  fetchLink: SafeFetch;
}
