import { musicRoutes } from '@chat/contracts';
import { contextOf, route, writeOnce } from '@chat/kit';
import type { FastifyInstance } from 'fastify';
import * as player from '../domain/player.ts';

/** The music area: player state and controls. */
export function registerMusicRoutes(app: FastifyInstance, deps: player.PlayerDeps): void {
  route(app, musicRoutes.state, async (req) => player.getPlayer(deps, contextOf(req), req.params.channelId));
  // Creating POSTs (each adds a track): a retry with the same Idempotency-Key answers the first result and adds nothing.
  route(app, musicRoutes.play, async (req, reply) =>
    player.play(deps, contextOf(req), req.body, (write) => writeOnce(deps.pool, req, reply, musicRoutes.play.status, write)),
  );
  route(app, musicRoutes.skip, async (req) => {
    await player.skip(deps, contextOf(req), req.body);
    return {};
  });
  route(app, musicRoutes.pause, async (req) => player.pause(deps, contextOf(req), req.body));
  route(app, musicRoutes.resume, async (req) => player.resume(deps, contextOf(req), req.body));
  route(app, musicRoutes.stop, async (req) => player.stop(deps, contextOf(req), req.body));
  route(app, musicRoutes.volume, async (req) => player.setVolume(deps, contextOf(req), req.body));
  route(app, musicRoutes.queue, async (req, reply) =>
    player.queue(deps, contextOf(req), req.body, (write) => writeOnce(deps.pool, req, reply, musicRoutes.queue.status, write)),
  );
  route(app, musicRoutes.removeQueueItem, async (req) => {
    await player.removeQueueItem(deps, contextOf(req), req.params.channelId, req.params.itemId);
    return undefined;
  });
  route(app, musicRoutes.modes, async (req) => player.setModes(deps, contextOf(req), req.params.channelId, req.body));
}
