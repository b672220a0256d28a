import { randomUUID } from 'node:crypto';
import { AUTH_SUBJECTS, UserComembersRpc, UserFriendsRpc } from '@chat/contracts';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { dispatchHarness, eventOf as event } from './dispatch-harness.ts';

/**
 * A user's own sessions are sent their account as GET /v1/users/@me shows it whenever it changes
 * (auth.account.updated), asked of auth when dispatched; friends and co-members get the public
 * fields of auth.user.updated, and the user does not get those too. Real Redis.
 */

const friendsOf = new Map<string, string[]>();
const accounts = new Map<string, unknown>();
const account = vi.fn(async (userId: string) => accounts.get(userId) as never);
const { dispatcher, sessionOf, close } = dispatchHarness({
  answers: {
    [UserFriendsRpc.subject]: ({ userId }) => ({ userIds: friendsOf.get(userId as string) ?? [] }),
    [UserComembersRpc.subject]: () => ({ userIds: [] }),
  },
  account,
});
afterAll(close);

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
