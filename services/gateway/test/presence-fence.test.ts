import { randomUUID } from 'node:crypto';
import { REALTIME_SUBJECTS } from '@chat/contracts';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { createRedis, redisReady } from '../src/db/redis.ts';
import { FencedOff } from '../src/domain/dispatch.ts';
import { createPresence } from '../src/domain/presence.ts';
import { dispatchHarness, eventOf } from './dispatch-harness.ts';

/**
 * A presence change read by a stream reader that has lost the dispatch lease since: applied by
 * it, an old choice would land over what its successor applied (an invisible user shown online).
 */
const redis = createRedis(inject('backing').redisUrl, 3_000);
if (!(await redisReady(redis, 15_000))) throw new Error('the shared Redis did not connect within 15 s');
const prefix = `presence-fence-${randomUUID()}:`;
const presence = createPresence({ redis, prefix, livenessMs: 60_000, announce: async () => {} });
const harness = dispatchHarness({ presence });
afterAll(() => {
  harness.close();
  redis.disconnect();
});

const leaseKey = `${prefix}lease`;
const fenced = (token: string) => ({ fence: [leaseKey, token] as const });
const shown = async (userId: string) => (await presence.shown([userId]))[userId];

describe('a presence change', () => {
  it('is applied under the lease its reader holds, and refused (FencedOff, nothing written) once another tenure holds it', async () => {
    const userId = randomUUID();
    await presence.connected(userId, 'session-1');
    await redis.set(leaseKey, 'successor');
    const chose = (status: string) => eventOf(REALTIME_SUBJECTS.presenceUpdated, { userId, status, customStatus: '' });
    const played = (name: string) =>
      eventOf(REALTIME_SUBJECTS.activityUpdated, { userId, activity: { gameId: null, name, startedAt: new Date().toISOString() } });

    await harness.dispatcher.dispatch(played('Chess'), fenced('successor'));
    await harness.dispatcher.dispatch(chose('invisible'), fenced('successor'));
    expect(await shown(userId)).toEqual({ status: 'offline', activity: null });

    // The predecessor read these before it lost the lease: they are older than what was applied.
    await expect(harness.dispatcher.dispatch(chose('online'), fenced('predecessor'))).rejects.toBeInstanceOf(FencedOff);
    await expect(harness.dispatcher.dispatch(played('Go'), fenced('predecessor'))).rejects.toBeInstanceOf(FencedOff);
    expect(await redis.hmget(`${prefix}ps:${userId}`, 'chosen', 'activity')).toEqual(['invisible', expect.stringContaining('Chess')]);
    expect(await shown(userId)).toEqual({ status: 'offline', activity: null });

    await harness.dispatcher.dispatch(chose('online'), fenced('successor'));
    expect(await shown(userId)).toMatchObject({ status: 'online', activity: { name: 'Chess' } });
  });
});
