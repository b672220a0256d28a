import { withTx } from '@chat/kit';
import * as players from '../db/players.ts';
import { advanceQueue, clockOf, commitChange, type PlayerDeps } from './player.ts';

/** Players handled per round; the rest wait for the next round (a few hundred milliseconds). */
const BATCH = 50;
/** Ends of one player handled in one round, so a long outage cannot hold a transaction for ever. */
const MAX_ENDS_PER_ROUND = 100;

/**
 * The player clock: every player whose current track ended by `now` moves on, once per ended track,
 * each next track starting exactly when the previous one ended (so after a restart the player is
 * where it would have been, not stalled). Several replicas may run it at once: a player is locked
 * by one of them and skipped by the others, and a control that holds it makes the clock wait for
 * the next round, when `ends_at` says whether it still ended. Answers how many ends it handled.
 */
export async function advanceDuePlayers(deps: PlayerDeps, now: Date): Promise<number> {
  // Most rounds find nothing due: one statement then, not a transaction's three round trips.
  if (!(await players.anyDuePlayer(deps.pool, now))) return 0;
  return withTx(deps.pool, async (tx) => {
    let handled = 0;
    for (const player of await players.lockDuePlayers(tx, now, BATCH)) {
      let endsAt = player.endsAt;
      for (let i = 0; endsAt !== null && endsAt <= now && i < MAX_ENDS_PER_ROUND; i++) {
        const ended = await players.findCurrentTrack(tx, player.channelId);
        await advanceQueue(tx, player, { endedBy: 'clock', at: endsAt });
        const state = await commitChange(tx, player.channelId, 'ended', ended?.requestedBy ?? player.channelId, now);
        endsAt = state.current ? await currentEnd(tx, player.channelId) : null;
        handled++;
      }
    }
    return handled;
  });
}

async function currentEnd(tx: Parameters<typeof players.refreshEndsAt>[0], channelId: string): Promise<Date | null> {
  return players.refreshEndsAt(tx, channelId);
}

/**
 * Runs the clock every `intervalMs` until stopped, at the time its deps' clock says; a failed round
 * is logged and the next one tries again.
 */
export function startPlayerClock(deps: PlayerDeps, intervalMs = 250): { stop(): Promise<void> } {
  let running: Promise<unknown> = Promise.resolve();
  const timer = setInterval(() => {
    running = running
      .then(() => advanceDuePlayers(deps, clockOf(deps)))
      .catch((err) => deps.log?.error({ err }, 'player clock round failed'));
  }, intervalMs);
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
