import { gamesRoutes as r } from '@chat/contracts';
import { contextOf, route } from '@chat/kit';
import type { FastifyInstance } from 'fastify';
import type { SocialDeps } from '../deps.ts';
import { findGames, gameById, setActivity } from '../domain/games.ts';

export function gamesRoutes(app: FastifyInstance, deps: SocialDeps): void {
  const games = { pool: deps.pool, clock: deps.clock ?? (() => new Date()) };
  route(app, r.search, (req) => findGames(games, req.query));
  route(app, r.get, (req) => gameById(games, req.params.id));
  route(app, r.putActivity, async (req, reply) => {
    const activity = await setActivity(games, contextOf(req), req.body);
    if (activity === null) {
      reply.code(204);
      return undefined as never;
    }
    return activity;
  });
}
