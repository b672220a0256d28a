import { randomUUID } from 'node:crypto';
import { SOCIAL_SUBJECTS, UserComembersRpc, UserFriendsRpc } from '@chat/contracts';
import { afterAll, describe, expect, it } from 'vitest';
import { dispatchHarness, eventOf } from './dispatch-harness.ts';

/**
 * DM_CONVERSATION_CREATE shows each participant the conversation as their list does: the others'
 * status as that participant may see it, so a stranger in a group shows offline to them. Real Redis.
 */

const friendsOf = new Map<string, string[]>();
const { dispatcher, sessionOf, close } = dispatchHarness({
  answers: {
    [UserFriendsRpc.subject]: ({ userId }) => ({ userIds: friendsOf.get(userId as string) ?? [] }),
    [UserComembersRpc.subject]: () => ({ userIds: [] }),
  },
  // Everyone is online for those who may see them.
  presence: { seen: async (userIds: string[]) => Object.fromEntries(userIds.map((id) => [id, 'online' as const])) },
});
afterAll(close);

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
    await dispatcher.dispatch(eventOf(SOCIAL_SUBJECTS.conversationCreated, data));
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
