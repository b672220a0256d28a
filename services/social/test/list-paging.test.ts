import { randomUUID } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness } from './harness.ts';

const h = await createHarness();
afterAll(() => h.close());

type Item = Record<string, unknown> & { user?: { id: string }; id?: string };
type Caller = Awaited<ReturnType<typeof h.addUser>>;
const sql = (text: string, params: unknown[] = []) => h.runtime.pool.query(text, params);
const sorted = (keys: string[]) => [...keys].sort();

/** Walks a list with `after` to its last (short) page; `between` runs after each page. */
async function walk(caller: Caller, url: string, key: (item: Item) => string, limit: number, between?: () => Promise<void>) {
  const seen: string[] = [];
  for (let after: string | undefined, pages = 0; pages < 50; pages++) {
    const res = await h.call(caller, 'GET', `${url}?limit=${limit}${after ? `&after=${after}` : ''}`);
    expect(res.status).toBe(200);
    expect(Array.isArray(res.body)).toBe(true);
    seen.push(...res.body.map(key));
    if (res.body.length < limit) return seen;
    after = seen.at(-1);
    await between?.();
  }
  throw new Error('too many pages');
}
const userKey = (item: Item) => item.user!.id;

let me: Caller;
const friends: string[] = [];
const blocked: string[] = [];
const requests: string[] = [];
const conversations: string[] = [];

// Volume is seeded with the rows the routes would write; the reading is what is under test.
const addFriend = async (id = randomUUID()) => {
  await sql('INSERT INTO friendships (user_id, friend_id) VALUES ($1, $2), ($2, $1)', [me.id, id]);
  friends.push(id);
};
const addConversation = async () => {
  const id = uuidv7();
  const other = randomUUID();
  await sql('INSERT INTO conversations (id, is_group, pair_key) VALUES ($1, false, $2)', [id, [me.id, other].sort().join(':')]);
  await sql('INSERT INTO conversation_participants (conversation_id, user_id) VALUES ($1, $2), ($1, $3)', [id, me.id, other]);
  conversations.push(id);
};

beforeAll(async () => {
  me = await h.addUser();
  for (let i = 0; i < 60; i++) {
    await addFriend();
    const b = randomUUID();
    await sql('INSERT INTO blocks (blocker_id, blocked_id) VALUES ($1, $2)', [me.id, b]);
    blocked.push(b);
    const r = randomUUID();
    await sql(
      i % 2 ? 'INSERT INTO friend_requests (requester_id, recipient_id) VALUES ($1, $2)' : 'INSERT INTO friend_requests VALUES ($2, $1)',
      [me.id, r],
    );
    requests.push(r);
    await addConversation();
  }
});

describe('lists of the social service', () => {
  it('answer bare arrays of 50 by default, in key order', async () => {
    for (const [url, keys, key] of [
      ['/v1/friends', friends, userKey],
      ['/v1/friends/blocked', blocked, userKey],
      ['/v1/friends/requests', requests, userKey],
      ['/v1/dm/conversations', conversations, (c: Item) => c.id as string],
    ] as const) {
      const res = await h.call(me, 'GET', url);
      expect(res.status, url).toBe(200);
      expect(res.body.map(key), url).toEqual(sorted(keys).slice(0, 50));
    }
  });

  it('walk to the end with after, every row once, in both directions of friend requests', async () => {
    expect(await walk(me, '/v1/friends/blocked', userKey, 25)).toEqual(sorted(blocked));
    const seen = await walk(me, '/v1/friends/requests', userKey, 25);
    expect(seen).toEqual(sorted(requests));
    const directions = (await h.call(me, 'GET', '/v1/friends/requests?limit=100')).body.map((r: Item) => r.direction);
    expect(new Set(directions)).toEqual(new Set(['incoming', 'outgoing']));
  });

  it('page backwards with before, in ascending order', async () => {
    const all = sorted(friends);
    const res = await h.call(me, 'GET', `/v1/friends?before=${all[20]}&limit=4`);
    expect(res.body.map(userKey)).toEqual(all.slice(16, 20));
    const convs = sorted(conversations);
    const back = await h.call(me, 'GET', `/v1/dm/conversations?before=${convs[5]}`);
    expect(back.body.map((c: Item) => c.id)).toEqual(convs.slice(0, 5));
  });

  it('see every existing row exactly once while rows are added during the walk', async () => {
    const existingFriends = [...friends];
    const seenFriends = await walk(me, '/v1/friends', userKey, 9, () => addFriend());
    expect(new Set(seenFriends).size).toBe(seenFriends.length);
    for (const id of existingFriends) expect(seenFriends).toContain(id);

    const existingConversations = [...conversations];
    const seenConversations = await walk(me, '/v1/dm/conversations', (c) => c.id as string, 9, addConversation);
    expect(new Set(seenConversations).size).toBe(seenConversations.length);
    for (const id of existingConversations) expect(seenConversations).toContain(id);
    // Conversation ids are time-ordered, so the ones added during the walk come after the cursor.
    expect(seenConversations).toEqual(sorted(conversations));
  });

  it('refuse a bad limit or a cursor that is not a UUID (400)', async () => {
    for (const url of [
      '/v1/friends?limit=0',
      '/v1/friends/blocked?limit=101',
      '/v1/friends/requests?after=x',
      '/v1/dm/conversations?before=1',
    ]) {
      const res = await h.call(me, 'GET', url);
      expect(res.status, url).toBe(400);
      expect(res.body).toEqual({ error: expect.any(String) });
    }
  });
});
