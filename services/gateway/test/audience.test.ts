import { randomUUID } from 'node:crypto';
import { GUILDS_SUBJECTS, MESSAGES_SUBJECTS, SOCIAL_SUBJECTS } from '@chat/contracts';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, inject, it, vi } from 'vitest';
import { type Ask, createAudience } from '../src/domain/audience.ts';
import { createSessionStore, STALE_AUDIENCE } from '../src/domain/session-store.ts';

/**
 * A channel's audience cached per replica, checked against its versions in Redis at delivery: one
 * Redis round trip per message while nothing changes, and a fresh list as soon as something does.
 * Real Redis; guilds' viewer RPC is a list the test sets (the e2e realtime tests ask the real one).
 */

const redis = new Redis(inject('backing').redisUrl);
afterAll(() => redis.disconnect());

const prefix = `gwtest:${randomUUID()}:`;
const serverId = randomUUID();
const channelId = randomUUID();
let viewers = ['alice', 'bob'];
const ask = vi.fn(async () => ({ userIds: viewers })) as unknown as Ask & ReturnType<typeof vi.fn>;
const audience = createAudience({ ask, redis, prefix });
const store = createSessionStore({ redis, prefix, resumeWindowMs: 120_000, livenessMs: 60_000, bufferSize: 10 });
const posted = () => ({ id: randomUUID(), channelId, serverId });

describe('the audience of a channel message', () => {
  it('asks guilds once, then serves the list with its versions and reads none before delivery', async () => {
    const mget = vi.spyOn(redis, 'mget');
    const first = await audience.recipients(MESSAGES_SUBJECTS.messageCreated, posted());
    expect(first).toEqual({ userIds: ['alice', 'bob'] });
    expect(mget).toHaveBeenCalledTimes(1);
    const again = await audience.recipients(MESSAGES_SUBJECTS.messageCreated, posted());
    expect(again.userIds).toEqual(['alice', 'bob']);
    expect(again.guard).toEqual([
      [`${prefix}v:${serverId}`, ''],
      [`${prefix}vc:${channelId}`, ''],
    ]);
    expect(mget).toHaveBeenCalledTimes(1);
    expect(ask).toHaveBeenCalledTimes(1);
    expect(await store.deliver('MESSAGE_CREATE', '{}', again, randomUUID())).toBe(0);
    mget.mockRestore();
  });

  it('has its cached list refused at delivery once an override changed, and answers the new one fresh', async () => {
    await audience.invalidate(GUILDS_SUBJECTS.overrideUpdated, { channelId, serverId });
    viewers = ['alice'];
    const cached = await audience.recipients(MESSAGES_SUBJECTS.messageCreated, posted());
    expect(cached.userIds).toEqual(['alice', 'bob']);
    expect(await store.deliver('MESSAGE_CREATE', '{}', cached, randomUUID())).toBe(STALE_AUDIENCE);
    const fresh = await audience.recipients(MESSAGES_SUBJECTS.messageCreated, posted(), { fresh: true });
    expect(fresh).toEqual({ userIds: ['alice'] });
    // Cached again at the new versions: accepted.
    const next = await audience.recipients(MESSAGES_SUBJECTS.messageCreated, posted());
    expect(next.userIds).toEqual(['alice']);
    expect(await store.deliver('MESSAGE_CREATE', '{}', next, randomUUID())).toBe(0);
  });
});

describe('the audience of a group left', () => {
  it('is those who remain and the one who left, from the event alone', async () => {
    ask.mockClear();
    const [leaver, stayer, other] = [randomUUID(), randomUUID(), randomUUID()];
    const left = { conversationId: randomUUID(), userId: leaver, ownerId: stayer, participantIds: [stayer, other] };
    expect(await audience.recipients(SOCIAL_SUBJECTS.conversationLeft, left)).toEqual({ userIds: [stayer, other, leaver] });
    // The last one out: the group is gone, and only they are told.
    const emptied = { ...left, ownerId: null, participantIds: [] };
    expect(await audience.recipients(SOCIAL_SUBJECTS.conversationLeft, emptied)).toEqual({ userIds: [leaver] });
    expect(ask).not.toHaveBeenCalled();
  });
});
