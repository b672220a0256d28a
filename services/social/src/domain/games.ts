import {
  ACTIVITY_SUBJECTS,
  type Activity,
  type ActivityUpdatedEvent,
  type Game,
  type PutActivityBody,
  type UserDisconnectedEvent,
} from '@chat/contracts';
import { enqueueEvent, notFound, type Pool, type Queryable, type RequestContext, withTx } from '@chat/kit';
import { deleteActivity, deleteActivityStartedBy, findGame, firstGames, searchGames, upsertActivity } from '../db/games.ts';
import { normaliseGameName } from './game-catalogue.ts';

/** Searching the game index, and what users are playing. */

type Deps = { pool: Pool; clock: () => Date };

export async function findGames(deps: Deps, query: { q: string; limit: number }): Promise<Game[]> {
  const normalised = normaliseGameName(query.q);
  return normalised ? searchGames(deps.pool, normalised, query.limit) : firstGames(deps.pool, query.limit);
}

export async function gameById(deps: Deps, id: string): Promise<Game> {
  const game = await findGame(deps.pool, id);
  if (!game) throw notFound('Game');
  return game;
}

/**
 * Sets (or with null clears) what the caller is playing. A game of the index is shown under its
 * catalogue name. Each real change is announced (`social.activity.updated`) for presence.
 */
export async function setActivity(deps: Deps, ctx: RequestContext, body: PutActivityBody): Promise<Activity | null> {
  const wanted = body === null ? null : body.gameId ? { gameId: body.gameId } : body.name ? { name: body.name } : null;
  return withTx(deps.pool, async (tx) => {
    if (wanted === null) {
      if (await deleteActivity(tx, ctx.userId)) await announce(tx, ctx, null);
      return null;
    }
    const game = wanted.gameId ? await findGame(tx, wanted.gameId) : undefined;
    if (wanted.gameId && !game) throw notFound('Game');
    const { activity, changed } = await upsertActivity(
      tx,
      ctx.userId,
      { gameId: game?.id ?? null, name: game?.name ?? wanted.name ?? '' },
      deps.clock(),
    );
    if (changed) await announce(tx, ctx, activity);
    return activity;
  });
}

/**
 * The user's last session closed (the gateway's `gateway.user.disconnected`): what they were
 * playing then ends. One set after the disconnection (a session opened again since) stays. Applied
 * once per event; a second delivery finds nothing to clear.
 */
export async function expireActivity(tx: Queryable, disconnected: UserDisconnectedEvent): Promise<void> {
  if (await deleteActivityStartedBy(tx, disconnected.userId, new Date(disconnected.at))) {
    await announce(tx, { userId: disconnected.userId }, null);
  }
}

async function announce(tx: Queryable, ctx: Pick<RequestContext, 'userId'> & { requestId?: string }, activity: Activity | null) {
  const data: ActivityUpdatedEvent = { userId: ctx.userId, activity };
  await enqueueEvent(tx, ACTIVITY_SUBJECTS.activityUpdated, data, ctx.requestId);
}
