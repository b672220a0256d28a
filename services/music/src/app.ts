import { createHttpApp, registerHealth } from '@chat/kit';
import type { FastifyInstance } from 'fastify';
import type { MusicDeps } from './deps.ts';
import { registerMusicRoutes } from './routes/music.ts';

/** The music service's HTTP app; tests build it and call inject() without a port. */
export async function buildApp(deps: MusicDeps): Promise<FastifyInstance> {
  const app = createHttpApp({ log: deps.log, tokens: deps.tokens });
  registerHealth(app, deps.checks);
  registerMusicRoutes(app, deps);
  return app;
}
