import { createHttpApp, registerHealth } from '@chat/kit';
import type { FastifyInstance } from 'fastify';
import type { MediaDeps } from './deps.ts';

/** The media service's HTTP app; tests build it and call inject() without a port. */
export async function buildApp(deps: MediaDeps): Promise<FastifyInstance> {
  const app = createHttpApp({ log: deps.log, tokens: deps.tokens, validateResponses: deps.config.NODE_ENV !== 'production' });
  registerHealth(app, deps.checks);
  return app;
}
