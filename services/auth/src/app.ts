import { createHttpApp, registerHealth } from '@chat/kit';
import type { FastifyInstance } from 'fastify';
import type { AuthDeps } from './deps.ts';
import { authHttpRoutes } from './routes/auth.ts';
import { userHttpRoutes } from './routes/users.ts';

/** The auth service's HTTP app; tests build it and call inject() without a port. */
export async function buildApp(deps: AuthDeps): Promise<FastifyInstance> {
  const app = createHttpApp({ log: deps.log, tokens: deps.tokens });
  registerHealth(app, deps.checks);
  authHttpRoutes(app, deps);
  userHttpRoutes(app, deps);
  return app;
}
