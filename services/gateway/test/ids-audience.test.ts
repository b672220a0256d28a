import { randomUUID } from 'node:crypto';
import { GUILDS_SUBJECTS, MESSAGES_SUBJECTS } from '@chat/contracts';
import { outboxRow } from '@chat/kit';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, inject, it, vi } from 'vitest';
import { type Ask, createAudience } from '../src/domain/audience.ts';
import { createSessionStore, STALE_AUDIENCE } from '../src/domain/session-store.ts';

/**
 * The audience cache is keyed by ids as events carry them. An event is written as guilds writes
 * it (its payload parsed by its contract, outboxRow), from a request that named the server or the
 * channel in upper case: the cache must still hear of the change. Real Redis.
 */

const redis = new Redis(inject('backing').redisUrl);
afterAll(() => redis.disconnect());

const prefix = `gwtest:${randomUUID()}:`;
let viewers = ['owner', 'member'];
const ask = vi.fn(async () => ({ userIds: viewers })) as unknown as Ask;
const audience = createAudience({ ask, redis, prefix });
const store = createSessionStore({ redis, prefix, resumeWindowMs: 120_000, livenessMs: 60_000, bufferSize: 10 });
const upper = (id: string) => id.toUpperCase();

/** The event's data as the outbox holds it. */
const written = (subject: string, data: Record<string, unknown>) => outboxRow(subject, data).payload.data as Record<string, string>;
/** A message of the channel gone (any message event takes the channel's audience). */
const deleted = (channelId: string, serverId: string) =>
  written(MESSAGES_SUBJECTS.messageDeleted, { id: randomUUID(), channelId, serverId });

describe('ids in upper case and the audience cache', () => {
  it('a kick through an upper-case server id refuses the list cached for the server', async () => {
    viewers = ['owner', 'member'];
    const [serverId, channelId] = [randomUUID(), randomUUID()];
    await audience.recipients(MESSAGES_SUBJECTS.messageDeleted, deleted(channelId, serverId));
    const cached = await audience.recipients(MESSAGES_SUBJECTS.messageDeleted, deleted(channelId, serverId));
    expect(cached.userIds).toEqual(['owner', 'member']);
    const kick = written(GUILDS_SUBJECTS.memberLeft, {
      serverId: upper(serverId),
      userId: randomUUID(),
      reason: 'kicked',
      by: randomUUID(),
    });
    await audience.invalidate(GUILDS_SUBJECTS.memberLeft, kick);
    expect(await store.deliver('MESSAGE_CREATE', '{}', cached, randomUUID())).toBe(STALE_AUDIENCE);
  });

  it('a message event from an upper-case channel id is cached where a change of the channel finds it', async () => {
    viewers = ['owner', 'member'];
    const [serverId, channelId] = [randomUUID(), randomUUID()];
    const event = deleted(upper(channelId), upper(serverId));
    await audience.recipients(MESSAGES_SUBJECTS.messageDeleted, event);
    const cached = await audience.recipients(MESSAGES_SUBJECTS.messageDeleted, deleted(upper(channelId), upper(serverId)));
    await audience.invalidate(GUILDS_SUBJECTS.overrideUpdated, written(GUILDS_SUBJECTS.overrideUpdated, overrideOf(channelId, serverId)));
    expect(await store.deliver('MESSAGE_CREATE', '{}', cached, randomUUID())).toBe(STALE_AUDIENCE);
  });
});

function overrideOf(channelId: string, serverId: string) {
  return {
    id: randomUUID(),
    channelId,
    serverId,
    roleId: null,
    userId: randomUUID(),
    allowBits: 0,
    denyBits: 1024,
    createdAt: new Date().toISOString(),
  };
}
