import { randomUUID } from 'node:crypto';
import { SOCIAL_SUBJECTS, UserComembersRpc, UserFriendsRpc } from '@chat/contracts';
import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { afterAll, describe, expect, inject, it, vi } from 'vitest';
import { type Ask, createAudience } from '../src/domain/audience.ts';
import { createDispatcher } from '../src/domain/dispatch.ts';
import type { Presence } from '../src/domain/presence.ts';
import { createSessionStore } from '../src/domain/session-store.ts';
import { notAsked } from './helpers.ts';

/**
 * DM_CONVERSATION_CREATE shows each participant the conversation as their list does: the others'
 * status as that participant may see it, so a stranger in a group shows offline to them. Real Redis.
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
// Everyone is online for those who may see them.
const presence = {
  seen: async (userIds: string[]) => Object.fromEntries(userIds.map((id) => [id, 'online'])),
} as unknown as Presence;
const dispatcher = createDispatcher({ store, audience, presence, log, account: notAsked });

async function sessionOf(userId: string) {
  const sessionId = randomUUID();
  await store.create({ sessionId, userId, authSid: randomUUID(), node: 'node-x', readyJson: '{}' });
  return async () => (await store.framesAfter(sessionId, 1)).map((f) => JSON.parse(f.frame) as { t: string; d: unknown });
}

const summary = (id: string, name: string) => ({ id, username: name, displayName: name, avatarUrl: null });

describe('DM_CONVERSATION_CREATE', () => {
  it('shows each participant the others as they may see them, and nobody else the conversation', async () => {
    const [ann, bob, cat, outsider] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
    // Ann is friends with Bob and Cat; Bob and Cat are strangers to one another.
    friendsOf.set(ann, [bob, cat]);
    friendsOf.set(bob, [ann]);
    friendsOf.set(cat, [ann]);
    const sessions = { ann: await sessionOf(ann), bob: await sessionOf(bob), outsider: await sessionOf(outsider) };
    const conversation = {
      id: randomUUID(),
      type: 'group',
      ownerId: ann,
      participants: [summary(ann, 'ann'), summary(bob, 'bob'), summary(cat, 'cat')],
      lastMessage: null,
      lastActivityAt: '2026-11-28T10:00:00.000Z',
      createdAt: '2026-11-28T10:00:00.000Z',
      call: null,
    };
    const data = { conversationId: conversation.id, type: 'group', participantIds: [ann, bob, cat], conversation };
    await dispatcher.dispatch({
      id: randomUUID(),
      subject: SOCIAL_SUBJECTS.conversationCreated,
      occurredAt: new Date().toISOString(),
      data,
    });
    const statuses = async (session: () => Promise<{ t: string; d: unknown }[]>) =>
      (await session()).map((f) => [f.t, (f.d as { participants: { status: string }[] }).participants.map((p) => p.status)]);
    expect(await statuses(sessions.ann)).toEqual([['DM_CONVERSATION_CREATE', ['online', 'online', 'online']]]);
    expect(await statuses(sessions.bob)).toEqual([['DM_CONVERSATION_CREATE', ['online', 'online', 'offline']]]);
    expect((await sessions.ann())[0]?.d).toMatchObject({
      ...conversation,
      participants: conversation.participants.map((p) => expect.objectContaining(p)),
    });
    expect(await sessions.outsider()).toEqual([]);
  });
});
