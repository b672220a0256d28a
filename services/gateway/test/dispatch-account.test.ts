import { randomUUID } from 'node:crypto';
import { AUTH_SUBJECTS, UserComembersRpc, UserFriendsRpc } from '@chat/contracts';
import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { afterAll, describe, expect, inject, it, vi } from 'vitest';
import { type Ask, createAudience } from '../src/domain/audience.ts';
import { createDispatcher } from '../src/domain/dispatch.ts';
import type { Presence } from '../src/domain/presence.ts';
import { createSessionStore } from '../src/domain/session-store.ts';

/**
 * A user's own sessions are sent their account as GET /v1/users/@me shows it whenever it changes
 * (auth.account.updated), asked of auth when dispatched; friends and co-members get the public
 * fields of auth.user.updated, and the user does not get those too. Real Redis.
 */

const redis = new Redis(inject('backing').redisUrl);
afterAll(() => redis.disconnect());

const prefix = `gwtest:${randomUUID()}:`;
const friendsOf = new Map<string, string[]>();
const ask = (async (contract: { subject: string }, data: { userId: string }) => {
  if (contract.subject === UserFriendsRpc.subject) return { userIds: friendsOf.get(data.userId) ?? [] };
  if (contract.subject === UserComembersRpc.subject) return { userIds: [] };
  throw new Error(`unexpected question ${contract.subject}`);
}) as unknown as Ask;
const store = createSessionStore({ redis, prefix, resumeWindowMs: 120_000, livenessMs: 60_000, bufferSize: 10 });
const audience = createAudience({ ask, redis, prefix });
const log = { error: vi.fn(), warn: vi.fn(), info: vi.fn(), debug: vi.fn() } as unknown as Logger;
const accounts = new Map<string, unknown>();
const account = vi.fn(async (userId: string) => accounts.get(userId) as never);
const dispatcher = createDispatcher({ store, audience, presence: {} as Presence, log, account });

async function sessionOf(userId: string) {
  const sessionId = randomUUID();
  await store.create({ sessionId, userId, authSid: randomUUID(), node: 'node-x', readyJson: '{}' });
  return async () => (await store.framesAfter(sessionId, 1)).map((f) => JSON.parse(f.frame) as { t: string; d: unknown });
}

const event = (subject: string, data: unknown) => ({ id: randomUUID(), subject, occurredAt: new Date().toISOString(), data });

const accountOf = (id: string) => ({
  id,
  username: `u${id.slice(0, 8)}`,
  displayName: 'Ann',
  avatarUrl: null,
  bio: 'a new bio',
  status: 'dnd',
  customStatus: 'busy',
  badges: [],
  createdAt: '2026-11-28T10:00:00.000Z',
  email: 'ann@example.test',
});

describe('USER_UPDATE', () => {
  it('sends every session of the user, and only theirs, the account as it is now, email and chosen status included', async () => {
    const [ann, friend] = [randomUUID(), randomUUID()];
    friendsOf.set(ann, [friend]);
    accounts.set(ann, accountOf(ann));
    const [phone, laptop, friendSession] = [await sessionOf(ann), await sessionOf(ann), await sessionOf(friend)];
    await dispatcher.dispatch(event(AUTH_SUBJECTS.accountUpdated, { userId: ann }));
    for (const session of [phone, laptop])
      expect(await session()).toEqual([expect.objectContaining({ t: 'USER_UPDATE', d: accountOf(ann) })]);
    expect(await friendSession()).toEqual([]);
    expect(account).toHaveBeenCalledWith(ann);
  });

  it("sends a name change's public fields to friends, not to the user, who has the account", async () => {
    const [bob, friend] = [randomUUID(), randomUUID()];
    friendsOf.set(bob, [friend]);
    const [own, friendSession] = [await sessionOf(bob), await sessionOf(friend)];
    const user = { id: bob, username: 'bob', displayName: 'Bob', avatarUrl: null, badges: [] };
    await dispatcher.dispatch(event(AUTH_SUBJECTS.userUpdated, user));
    expect(await friendSession()).toEqual([expect.objectContaining({ t: 'USER_UPDATE', d: user })]);
    expect(await own()).toEqual([]);
  });

  it('is not sent twice for one event (a redelivery)', async () => {
    const cid = randomUUID();
    accounts.set(cid, accountOf(cid));
    const session = await sessionOf(cid);
    const changed = event(AUTH_SUBJECTS.accountUpdated, { userId: cid });
    await dispatcher.dispatch(changed);
    await dispatcher.dispatch(changed);
    expect((await session()).map((f) => f.t)).toEqual(['USER_UPDATE']);
  });
});
