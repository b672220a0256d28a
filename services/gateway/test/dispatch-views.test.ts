import { randomUUID } from 'node:crypto';
import { GUILDS_SUBJECTS } from '@chat/contracts';
import { afterAll, describe, expect, it } from 'vitest';
import { dispatchHarness, eventOf } from './dispatch-harness.ts';

/**
 * A change of who sees which channels (guilds.channel.revealed / hidden, one event for many
 * channels and users): each channel its own CHANNEL_CREATE or CHANNEL_DELETE to exactly the users
 * named, and a redelivered event changes nothing. Real Redis.
 */
const { dispatcher, sessionOf, close } = dispatchHarness({ answers: {} });
afterAll(close);

const channelRecord = (serverId: string, name: string, position: number) => ({
  ...{ id: randomUUID(), serverId, categoryId: null, name, topic: null, channelType: 'text', position, isNsfw: false },
  ...{ slowmodeSeconds: 0, ownerId: null, isTemporary: false, isLocked: false, isHidden: false, userLimit: 0, musicLocked: false },
  createdAt: '2026-11-29T01:00:00.000Z',
});

describe('a change of who sees which channels', () => {
  it('is one dispatch per channel to the users named, once however often the event is delivered', async () => {
    const [ann, bob, outsider] = [randomUUID(), randomUUID(), randomUUID()];
    const sessions = { ann: await sessionOf(ann), bob: await sessionOf(bob), outsider: await sessionOf(outsider) };
    const serverId = randomUUID();
    const [general, quiet] = [channelRecord(serverId, 'general', 0), channelRecord(serverId, 'quiet', 1)];
    const revealed = eventOf(GUILDS_SUBJECTS.channelRevealed, { channels: [general, quiet], userIds: [ann, bob] });
    const hidden = eventOf(GUILDS_SUBJECTS.channelHidden, { serverId, ids: [quiet.id], userIds: [bob] });
    for (const event of [revealed, revealed, hidden, hidden]) await dispatcher.dispatch(event);

    const frames = async (session: () => Promise<{ t: string; d: unknown }[]>) => (await session()).map((f) => [f.t, f.d]);
    expect(await frames(sessions.ann)).toEqual([
      ['CHANNEL_CREATE', general],
      ['CHANNEL_CREATE', quiet],
    ]);
    expect(await frames(sessions.bob)).toEqual([
      ['CHANNEL_CREATE', general],
      ['CHANNEL_CREATE', quiet],
      ['CHANNEL_DELETE', { id: quiet.id, serverId }],
    ]);
    expect(await sessions.outsider()).toEqual([]);
  });
});
