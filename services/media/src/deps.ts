import type { Runtime, TokenVerifier } from '@chat/kit';
import type { MediaConfig } from './config.ts';
import type { ObjectStore } from './db/storage.ts';

/** Everything the media service's routes, bus handlers and domain receive from main. */
export interface MediaDeps extends Runtime {
  config: MediaConfig;
  tokens: TokenVerifier;
  storage: ObjectStore;
}
