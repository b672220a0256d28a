import { afterAll, describe, expect, it } from 'vitest';
import { createHarness } from './harness.ts';

/** A pair of users is one pair whatever the case their ids are written in. */

const h = await createHarness();
afterAll(() => h.close());

const upper = (id: string) => id.toUpperCase();
const rows = async (sql: string, params: unknown[] = []) => (await h.runtime.pool.query(sql, params)).rows;

describe('ids in upper case', () => {
  it('opens the pair’s one 1:1 conversation, from either side, whatever the case of the id', async () => {
    const [alice, bob] = [await h.addUser(), await h.addUser()];
    const first = await h.call(alice, 'POST', '/v1/dm/conversations', { userIds: [bob.id] });
    expect(first.status).toBe(201);
    const again = await h.call(alice, 'POST', '/v1/dm/conversations', { userIds: [upper(bob.id)] });
    expect(again.status).toBe(200);
    expect(again.body.id).toBe(first.body.id);
    const fromBob = await h.call(bob, 'POST', '/v1/dm/conversations', { userIds: [upper(alice.id)] });
    expect(fromBob.body.id).toBe(first.body.id);
    const direct = await rows(
      `SELECT c.id FROM conversations c JOIN conversation_participants p ON p.conversation_id = c.id
       WHERE NOT c.is_group AND p.user_id = $1`,
      [alice.id],
    );
    expect(direct).toEqual([{ id: first.body.id }]);
  });

  it('refuses a conversation with oneself written in upper case, as in lower case', async () => {
    const alice = await h.addUser();
    const self = await h.call(alice, 'POST', '/v1/dm/conversations', { userIds: [upper(alice.id)] });
    expect(self).toEqual({ status: 400, body: { error: expect.stringContaining('other than yourself') } });
  });

  it('accepts a friend request through the requester’s id in upper case and tells the requester', async () => {
    const [alice, bob] = [await h.addUser(), await h.addUser()];
    expect((await h.call(alice, 'POST', '/v1/friends/requests', { userId: bob.id })).status).toBe(201);
    const accepted = await h.call(bob, 'POST', '/v1/friends/accept', { userId: upper(alice.id) });
    expect(accepted.status).toBe(200);
    expect(accepted.body.user.id).toBe(alice.id);
    const told = (await h.events('social.friend.accepted')).filter((e) => e.data.requesterId === alice.id);
    expect(told).toEqual([
      { subject: 'social.friend.accepted', data: expect.objectContaining({ requesterId: alice.id, recipientId: bob.id }) },
    ]);
  });
});
