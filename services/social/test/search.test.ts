import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { createHarness } from './harness.ts';

/** GET /v1/dm/search: full-text search of the caller's own conversations. */

const h = await createHarness();
afterAll(() => h.close());

type User = Awaited<ReturnType<typeof h.addUser>>;
type Message = { id: string; conversationId: string; senderId: string; content: string };
type Found = { status: number; body: { total: number; messages: Message[]; error?: string } };

/** A word no other test uses, so each test counts only its own messages. */
const word = () => `w${randomBytes(5).toString('hex')}`;

async function conversation(a: User, ...others: User[]): Promise<string> {
  const res = await h.call(a, 'POST', '/v1/dm/conversations', { userIds: others.map((o) => o.id) });
  expect([200, 201]).toContain(res.status);
  return res.body.id;
}

async function send(user: User, conversationId: string, content: string): Promise<Message> {
  const res = await h.call(user, 'POST', '/v1/dm/messages', { conversationId, content });
  expect(res.status).toBe(201);
  return res.body;
}

const search = (user: User, query: Record<string, string | number>): Promise<Found> =>
  h.call(user, 'GET', `/v1/dm/search?${new URLSearchParams(Object.entries(query).map(([k, v]): [string, string] => [k, String(v)]))}`);
const ids = (found: Found) => found.body.messages.map((m) => m.id);

describe('direct message search', () => {
  it("finds only the caller's own conversations: another pair's messages never appear, not even in total", async () => {
    const [alice, bob, carol, dave] = [await h.addUser(), await h.addUser(), await h.addUser(), await h.addUser()];
    const w = word();
    const withBob = await conversation(alice, bob);
    const group = await conversation(alice, bob, carol);
    const mine = [await send(alice, withBob, `${w} to bob`), await send(carol, group, `${w} from carol`)];
    await send(carol, await conversation(carol, dave), `${w} carol and dave, privately`);

    const asAlice = await search(alice, { q: w });
    expect(asAlice.status).toBe(200);
    expect(asAlice.body.total).toBe(2);
    expect(ids(asAlice)).toEqual(mine.map((m) => m.id).reverse());
    const history = (await h.call(alice, 'GET', `/v1/dm/conversations/${group}/messages`)).body as Message[];
    expect(asAlice.body.messages[0]).toEqual(history.find((m) => m.id === mine[1]!.id));

    expect((await search(dave, { q: w })).body.total).toBe(1);
    const stranger = await h.addUser();
    expect((await search(stranger, { q: w })).body).toEqual({ total: 0, messages: [] });
  });

  it('stops finding a group once the caller has left it', async () => {
    const [alice, bob, carol] = [await h.addUser(), await h.addUser(), await h.addUser()];
    const w = word();
    const group = await conversation(alice, bob, carol);
    await send(bob, group, w);
    expect((await search(alice, { q: w })).body.total).toBe(1);
    expect((await h.call(alice, 'DELETE', `/v1/dm/conversations/${group}/members/@me`)).status).toBe(204);
    expect((await search(alice, { q: w })).body).toEqual({ total: 0, messages: [] });
    expect((await search(carol, { q: w })).body.total).toBe(1);
  });

  it('leaves out the messages of people the caller blocked, as the history does', async () => {
    const [alice, bob, carol] = [await h.addUser(), await h.addUser(), await h.addUser()];
    const w = word();
    const group = await conversation(alice, bob, carol);
    const fromBob = await send(bob, group, w);
    await send(carol, group, w);
    expect((await h.call(alice, 'POST', '/v1/friends/block', { userId: carol.id })).status).toBeLessThan(300);
    const asAlice = await search(alice, { q: w });
    expect(asAlice.body.total).toBe(1);
    expect(ids(asAlice)).toEqual([fromBob.id]);
    expect((await search(bob, { q: w })).body.total).toBe(2);
  });

  it('takes phrases, exclusions, or and accents, and pages without gaps or repeats', async () => {
    const [alice, bob] = [await h.addUser(), await h.addUser()];
    const w = word();
    const id = await conversation(alice, bob);
    const [cafe, brown, red] = [
      await send(alice, id, `${w} Café au lait`),
      await send(bob, id, `${w} the quick brown fox`),
      await send(alice, id, `${w} a quick red fox`),
    ];
    const found = async (q: string) => ids(await search(bob, { q: `${w} ${q}` }));
    expect(await found('cafe')).toEqual([cafe.id]);
    expect(await found('"quick brown"')).toEqual([brown.id]);
    expect(await found('fox -red')).toEqual([brown.id]);
    expect(await found('lait or red')).toEqual([red.id, cafe.id]);

    const first = await search(bob, { q: w, limit: 2 });
    expect(first.body.total).toBe(3);
    const second = await search(bob, { q: w, limit: 2, before: ids(first).at(-1)! });
    expect(second.body.total).toBe(3);
    expect([...ids(first), ...ids(second)]).toEqual([red.id, brown.id, cafe.id]);
    expect(ids(await search(bob, { q: w, after: cafe.id, limit: 1 }))).toEqual([brown.id]);
  });

  it('follows edits and deletes at once', async () => {
    const [alice, bob] = [await h.addUser(), await h.addUser()];
    const [before, after] = [word(), word()];
    const message = await send(alice, await conversation(alice, bob), before);
    expect((await search(bob, { q: before })).body.total).toBe(1);
    expect((await h.call(alice, 'PATCH', `/v1/dm/messages/${message.id}`, { content: after })).status).toBe(200);
    expect((await search(bob, { q: before })).body.total).toBe(0);
    expect((await search(bob, { q: after })).body.messages).toEqual([expect.objectContaining({ id: message.id, content: after })]);
    expect((await h.call(alice, 'DELETE', `/v1/dm/messages/${message.id}`)).status).toBe(204);
    expect((await search(bob, { q: after })).body).toEqual({ total: 0, messages: [] });
  });

  it.each([
    ['q', { q: '' }],
    ['q', { q: 'x'.repeat(201) }],
    ['q', { q: '?!' }],
    ['q', { q: '-alone' }],
    ['before', { q: 'hi', before: 'nope' }],
  ])('answers 400 naming %s for %j', async (field, query) => {
    const res = await search(await h.addUser(), query);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: expect.stringMatching(new RegExp(`^query\\.${field}: `)) });
  });
});
