import { createHttpApp, registerHealth } from '@chat/kit';
import type { FastifyInstance } from 'fastify';
import type { MusicDeps } from './deps.ts';
import { registerMusicRoutes } from './routes/music.ts';

/** The music service's HTTP app; tests build it and call inject() without a port. */
export async function buildApp(deps: MusicDeps): Promise<FastifyInstance> {
  // The pool keeps the answers of POST /v1/music/queue by Idempotency-Key.
  const app = createHttpApp({ log: deps.log, tokens: deps.tokens, pool: deps.pool });
  registerHealth(app, deps.checks);
  registerMusicRoutes(app, deps);
  return app;
}
