import { randomUUID } from 'node:crypto';
import { READ_STATE_SUBJECTS } from '@chat/contracts';
import { afterAll, describe, expect, it } from 'vitest';
import { dispatchHarness, eventOf as event } from './dispatch-harness.ts';

/**
 * The feed's own dispatches: a feed ack (NOTIFICATIONS_ACK) and entries that left the feed
 * (NOTIFICATION_DELETE) reach every session of the users the event names and nobody else, as
 * NOTIFICATION_CREATE does. Real Redis; nothing is asked of guilds.
 */

const { ask, dispatcher, sessionOf, close } = dispatchHarness({});
afterAll(close);

describe('feed dispatches', () => {
  it('tells every session of the user who acked the feed, with the REST answer, and nobody else', async () => {
    const [userId, other] = [randomUUID(), randomUUID()];
    const [phone, laptop, stranger] = [await sessionOf(userId), await sessionOf(userId), await sessionOf(other)];
    const lastReadId = randomUUID();
    await dispatcher.dispatch(event(READ_STATE_SUBJECTS.notificationsAcked, { userId, unreadCount: 2, lastReadId }));
    for (const session of [phone, laptop]) {
      expect(await session()).toEqual([expect.objectContaining({ t: 'NOTIFICATIONS_ACK', d: { unreadCount: 2, lastReadId } })]);
    }
    expect(await stranger()).toEqual([]);
    expect(ask).not.toHaveBeenCalled();
  });

  it('tells the users whose entries left the feed which ids left, without the list of users', async () => {
    const [ann, bob, carol] = [randomUUID(), randomUUID(), randomUUID()];
    const [annSession, bobSession, carolSession] = [await sessionOf(ann), await sessionOf(bob), await sessionOf(carol)];
    const ids = [randomUUID(), randomUUID()];
    await dispatcher.dispatch(event(READ_STATE_SUBJECTS.notificationsDeleted, { ids, userIds: [ann, bob] }));
    for (const session of [annSession, bobSession]) {
      expect(await session()).toEqual([expect.objectContaining({ t: 'NOTIFICATION_DELETE', d: { ids } })]);
    }
    expect(await carolSession()).toEqual([]);
  });
});
