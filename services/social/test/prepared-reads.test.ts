import { countRoundTrips } from '@chat/testkit';
import { afterAll, describe, expect, it } from 'vitest';
import { createHarness } from './harness.ts';

/**
 * Issue 18: the reads a client repeats most send only prepared statements (besides BEGIN and
 * COMMIT), which PostgreSQL plans once per connection instead of on every request.
 */
const h = await createHarness();
afterAll(() => h.close());

describe('the most repeated reads', () => {
  it('send only prepared statements: friends, conversations, a conversation’s pages', async () => {
    const [alice, bob, carol] = [await h.addUser(), await h.addUser(), await h.addUser()];
    const conversationId = (await h.call(alice, 'POST', '/v1/dm/conversations', { userIds: [bob.id] })).body.id as string;
    expect((await h.call(alice, 'POST', '/v1/dm/conversations', { userIds: [carol.id] })).status).toBeLessThan(300);
    const sent: string[] = [];
    for (const content of ['one', 'two']) sent.push((await h.call(alice, 'POST', '/v1/dm/messages', { conversationId, content })).body.id);
    expect((await h.call(alice, 'POST', '/v1/friends/requests', { userId: bob.id })).status).toBeLessThan(300);
    expect((await h.call(bob, 'POST', '/v1/friends/requests', { userId: alice.id })).status).toBeLessThan(300);
    expect((await h.call(alice, 'GET', '/v1/friends')).body).toHaveLength(1);

    const paths = [
      '/v1/friends',
      '/v1/dm/conversations',
      `/v1/dm/conversations/${conversationId}`,
      `/v1/dm/conversations/${conversationId}/messages?limit=50`,
      `/v1/dm/conversations/${conversationId}/messages?limit=50&before=${sent[1]}`,
    ];
    for (const path of paths) {
      const { result, statements } = await countRoundTrips(() => h.call(alice, 'GET', path));
      expect(result.status).toBe(200);
      const unprepared = statements.filter((s) => !/^p_[0-9a-f]{16}$/.test(s) && s !== 'BEGIN' && s !== 'COMMIT');
      expect({ path, unprepared }).toEqual({ path, unprepared: [] });
    }
  });
});
