import { randomUUID } from 'node:crypto';
import { READ_STATE_SUBJECTS } from '@chat/contracts';
import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { afterAll, describe, expect, inject, it, vi } from 'vitest';
import { type Ask, createAudience } from '../src/domain/audience.ts';
import { createDispatcher } from '../src/domain/dispatch.ts';
import type { Presence } from '../src/domain/presence.ts';
import { createSessionStore } from '../src/domain/session-store.ts';
import { notAsked } from './helpers.ts';

/**
 * The feed's own dispatches: a feed ack (NOTIFICATIONS_ACK) and entries that left the feed
 * (NOTIFICATION_DELETE) reach every session of the users the event names and nobody else, as
 * NOTIFICATION_CREATE does. Real Redis; nothing is asked of guilds.
 */

const redis = new Redis(inject('backing').redisUrl);
afterAll(() => redis.disconnect());

const prefix = `gwtest:${randomUUID()}:`;
const ask = vi.fn(async () => ({ userIds: [] })) as unknown as Ask & ReturnType<typeof vi.fn>;
const store = createSessionStore({ redis, prefix, resumeWindowMs: 120_000, livenessMs: 60_000, bufferSize: 10 });
const audience = createAudience({ ask, redis, prefix });
const log = { error: vi.fn(), warn: vi.fn(), info: vi.fn(), debug: vi.fn() } as unknown as Logger;
const dispatcher = createDispatcher({ store, audience, presence: {} as Presence, log, account: notAsked });

async function sessionOf(userId: string) {
  const sessionId = randomUUID();
  await store.create({ sessionId, userId, authSid: randomUUID(), node: 'node-x', readyJson: '{}' });
  return async () => (await store.framesAfter(sessionId, 1)).map((f) => JSON.parse(f.frame) as { t: string; d: unknown });
}

const event = (subject: string, data: unknown) => ({ id: randomUUID(), subject, occurredAt: new Date().toISOString(), data });

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
