import { checkRoomsPeriodically, type Logger, type MediaRooms, type Periodic, repeatEvery } from '@chat/kit';
import type { Domain } from './context.ts';
import { checkVoiceRooms, moveIdleMembersToAfk, sweepVoiceStates } from './voice.ts';

const BATCH = 100;

/**
 * Ends voice states whose client stopped heartbeating, a few times per TTL, and moves idle members
 * to their server's AFK channel (moveIdleMembersToAfk). Readers already ignore
 * an expired state, so the sweep's timing only decides when its guilds.voice.left event goes out
 * and its emptied temporary channel is deleted. Every replica may run one (see sweepVoiceStates).
 */
export function startVoiceSweeper(d: Pick<Domain, 'pool'>, log: Logger, ttlSeconds: number): Periodic {
  const intervalMs = Math.min(15_000, Math.max(1_000, (ttlSeconds * 1_000) / 4));
  const sweep = async () => {
    // A full batch means more may be waiting: keep going rather than wait for the next tick.
    while ((await sweepVoiceStates(d, new Date(), BATCH)) === BATCH) {}
    while ((await moveIdleMembersToAfk(d, new Date(), BATCH)) === BATCH) {}
  };
  return repeatEvery(intervalMs, sweep, log, 'voice sweep');
}

/**
 * Brings the voice rooms in line with the voice states (checkVoiceRooms, see checkRoomsPeriodically):
 * whoever connected again with a grant from before they were taken out, muted or lost SPEAK. Every
 * replica may run one: a change one made, the others no longer find.
 */
export function startVoiceRoomCheck(d: Pick<Domain, 'pool'>, rooms: MediaRooms, log: Logger): Periodic {
  return checkRoomsPeriodically((options) => checkVoiceRooms(rooms, d.pool, options), log, 'voice room check');
}
