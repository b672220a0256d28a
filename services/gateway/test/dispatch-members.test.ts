import { randomUUID } from 'node:crypto';
import { GUILDS_SUBJECTS, ServerMembersRpc } from '@chat/contracts';
import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { afterAll, describe, expect, inject, it, vi } from 'vitest';
import { type Ask, createAudience } from '../src/domain/audience.ts';
import { createDispatcher } from '../src/domain/dispatch.ts';
import type { Presence } from '../src/domain/presence.ts';
import { createSessionStore } from '../src/domain/session-store.ts';
import { notAsked } from './helpers.ts';

/**
 * SERVER_MEMBER_ADD and SERVER_MEMBER_UPDATE show the member as REST lists them, with what others
 * see of them now (the gateway's presence); SERVER_BAN_ADD the ban as REST lists it. Real Redis.
 */

const redis = new Redis(inject('backing').redisUrl);
afterAll(() => redis.disconnect());

const prefix = `gwtest:${randomUUID()}:`;
const membersOf = new Map<string, string[]>();
const ask = (async (contract: { subject: string }, data: { serverId: string }) => {
  if (contract.subject === ServerMembersRpc.subject) return { userIds: membersOf.get(data.serverId) ?? [] };
  throw new Error(`unexpected question ${contract.subject}`);
}) as unknown as Ask;
const store = createSessionStore({ redis, prefix, resumeWindowMs: 120_000, livenessMs: 60_000, bufferSize: 10 });
const audience = createAudience({ ask, redis, prefix });
const log = { error: vi.fn(), warn: vi.fn(), info: vi.fn(), debug: vi.fn() } as unknown as Logger;
const activity = { gameId: null, name: 'Chess', startedAt: '2026-11-28T09:00:00.000Z' };
const presence = {
  shown: async (userIds: string[]) => Object.fromEntries(userIds.map((id) => [id, { status: 'dnd', activity }])),
} as unknown as Presence;
const dispatcher = createDispatcher({ store, audience, presence, log, account: notAsked });

async function sessionOf(userId: string) {
  const sessionId = randomUUID();
  await store.create({ sessionId, userId, authSid: randomUUID(), node: 'node-x', readyJson: '{}' });
  return async () => (await store.framesAfter(sessionId, 1)).map((f) => JSON.parse(f.frame) as { t: string; d: unknown });
}

const event = (subject: string, data: unknown) => ({ id: randomUUID(), subject, occurredAt: new Date().toISOString(), data });

describe('member dispatches', () => {
  it('show a joined and a changed member with their user and what others see of them now', async () => {
    const [serverId, owner, member] = [randomUUID(), randomUUID(), randomUUID()];
    membersOf.set(serverId, [owner, member]);
    const ownerSession = await sessionOf(owner);
    const record = {
      serverId,
      userId: member,
      nickname: null,
      roleIds: [],
      joinedAt: '2026-11-28T10:00:00.000Z',
      user: { id: member, username: 'ann', displayName: 'Ann', avatarUrl: null, badges: [] },
    };
    await dispatcher.dispatch(event(GUILDS_SUBJECTS.memberJoined, record));
    await dispatcher.dispatch(event(GUILDS_SUBJECTS.memberUpdated, { ...record, nickname: 'Nick' }));
    expect(await ownerSession()).toEqual([
      expect.objectContaining({ t: 'SERVER_MEMBER_ADD', d: { ...record, status: 'dnd', activity } }),
      expect.objectContaining({ t: 'SERVER_MEMBER_UPDATE', d: { ...record, nickname: 'Nick', status: 'dnd', activity } }),
    ]);
  });

  it('show a ban with the banned user’s names', async () => {
    const [serverId, owner, banned] = [randomUUID(), randomUUID(), randomUUID()];
    membersOf.set(serverId, [owner]);
    const ownerSession = await sessionOf(owner);
    const ban = {
      serverId,
      userId: banned,
      username: 'bob',
      displayName: 'Bob',
      avatarUrl: null,
      bannedBy: owner,
      reason: 'spam',
      createdAt: '2026-11-28T10:00:00.000Z',
    };
    await dispatcher.dispatch(event(GUILDS_SUBJECTS.memberBanned, ban));
    expect(await ownerSession()).toEqual([expect.objectContaining({ t: 'SERVER_BAN_ADD', d: ban })]);
  });
});
