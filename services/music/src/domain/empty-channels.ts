import type { Queryable } from '@chat/kit';
import * as players from '../db/players.ts';
import { clockOf, commitChange, type PlayerDeps } from './player.ts';

/** A voice state's end after which nobody is connected to its channel, as guilds said it. */
export interface EmptiedChannel {
  channelId: string;
  /** Whose leaving (or move, disconnect, removal, expiry) emptied it: the pause's actor. */
  userId: string;
}

/**
 * Pauses the player of a voice channel nobody is connected to any more, as music bots do when the
 * last listener goes: the queue and the position stay, and whoever joins again resumes it (POST
 * /v1/music/resume). A paused player has no `ends_at`, so the clock stops advancing it; a looping one
 * would otherwise publish `ended` for ever to an empty room. An idle or paused player is left as it
 * is (no event), and none is created for a channel that never had one. Guilds decides emptiness
 * under the channel's lock; someone who joins right after it finds the player paused.
 */
export async function pauseEmptiedChannel(deps: Pick<PlayerDeps, 'now'>, tx: Queryable, emptied: EmptiedChannel): Promise<void> {
  const player = await players.findPlayerForUpdate(tx, emptied.channelId);
  if (!player?.playing || player.paused) return;
  const now = clockOf(deps);
  // A track that ended before the clock came to it pauses at its end; resumed, the clock moves on at once.
  const at = player.endsAt !== null && player.endsAt < now ? player.endsAt : now;
  await players.pauseCurrentTrack(tx, emptied.channelId, at);
  await commitChange(tx, emptied.channelId, 'pause', emptied.userId, now);
}
