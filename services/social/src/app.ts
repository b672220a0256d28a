import { createHttpApp, mediaGrantIssuer, registerHealth } from '@chat/kit';
import type { FastifyInstance } from 'fastify';
import type { SocialDeps } from './deps.ts';
import type { CallDeps } from './domain/calls.ts';
import { callRoutes } from './routes/calls.ts';
import { dmRoutes } from './routes/dm.ts';
import { friendsRoutes } from './routes/friends.ts';
import { gamesRoutes } from './routes/games.ts';
import { keysRoutes } from './routes/keys.ts';
import { readStatesRoutes } from './routes/read-states.ts';

/** What the calls domain needs, from the service's deps (main runs the call clock with the same). */
export function callDeps(deps: SocialDeps): CallDeps {
  return {
    pool: deps.pool,
    issueMediaGrant: mediaGrantIssuer(deps.config),
    ringTimeoutSeconds: deps.config.CALL_RING_TIMEOUT_SECONDS,
    now: () => new Date(),
  };
}

/** The social service's HTTP app; tests build it and call inject() without a port. */
export async function buildApp(deps: SocialDeps): Promise<FastifyInstance> {
  const app = createHttpApp({
    log: deps.log,
    tokens: deps.tokens,
    pool: deps.pool,
  });
  registerHealth(app, deps.checks);
  friendsRoutes(app, deps);
  dmRoutes(app, deps);
  keysRoutes(app, deps);
  gamesRoutes(app, deps);
  callRoutes(app, callDeps(deps));
  readStatesRoutes(app, deps);
  return app;
}
