import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { createHarness } from './harness.ts';

/**
 * Migration 0016 keys 1:1 conversations by the two ids in lower case, and merges the second
 * conversation that an upper-case id once made for the same two people into the one clients open
 * now: its statements run again here over rows written as the older code let them be.
 */

const h = await createHarness();
afterAll(() => h.close());

const migration = readFileSync(new URL('../migrations/0016_canonical_pair_keys.sql', import.meta.url), 'utf8');
const rows = async (sql: string, params: unknown[] = []) => (await h.runtime.pool.query(sql, params)).rows;

type User = Awaited<ReturnType<typeof h.addUser>>;

/** A 1:1 conversation as the older code made it for a client that wrote `first`'s id (or both) in upper case. */
async function conversationOfOldKey(first: User, second: User, both = false): Promise<string> {
  const id = randomUUID();
  const key = [first.id.toUpperCase(), both ? second.id.toUpperCase() : second.id].sort().join(':');
  await rows(`INSERT INTO conversations (id, is_group, pair_key, created_at) VALUES ($1, false, $2, now() - interval '1 day')`, [id, key]);
  await rows('INSERT INTO conversation_participants (conversation_id, user_id) VALUES ($1, $2), ($1, $3)', [id, first.id, second.id]);
  return id;
}

const post = async (user: User, conversationId: string, content: string) => {
  const res = await h.call(user, 'POST', '/v1/dm/messages', { conversationId, content });
  expect(res.status).toBe(201);
  return res.body.id as string;
};

describe('migration 0016', () => {
  it("merges a pair's second conversation into the one opened now: messages, read marks, notifications and calls move", async () => {
    const [alice, bob] = [await h.addUser(), await h.addUser()];
    const old = await conversationOfOldKey(alice, bob);
    const fresh = (await h.call(alice, 'POST', '/v1/dm/conversations', { userIds: [bob.id] })).body.id as string;
    expect(fresh).not.toBe(old);

    const inOld = await post(bob, old, 'written in the old one');
    const inFresh = await post(alice, fresh, 'written in the new one');
    const later = await post(bob, old, 'the newest, in the old one');
    expect((await h.call(alice, 'PUT', `/v1/dm/conversations/${old}/ack`, { messageId: later })).status).toBe(200);
    expect((await h.call(alice, 'PUT', `/v1/dm/conversations/${fresh}/ack`, { messageId: inFresh })).status).toBe(200);
    const ring = await h.call(bob, 'POST', `/v1/dm/conversations/${old}/call`);
    expect(ring.status).toBe(201);
    await rows(`INSERT INTO notifications (user_id, id, kind, conversation_id, created_at) VALUES ($1, $2, 'dm_reply', $3, now())`, [
      alice.id,
      randomUUID(),
      old,
    ]);

    await rows(migration);

    expect(await rows('SELECT id, pair_key FROM conversations WHERE id = ANY($1)', [[old, fresh]])).toEqual([
      { id: fresh, pair_key: [alice.id, bob.id].sort().join(':') },
    ]);
    const page = await h.call(alice, 'GET', `/v1/dm/conversations/${fresh}/messages`);
    // The ring posted its call_started message in the old conversation: it moved too.
    expect(page.body.map((m: { id: string; type: string }) => [m.id, m.type])).toEqual([
      [expect.any(String), 'call_started'],
      [later, 'default'],
      [inFresh, 'default'],
      [inOld, 'default'],
    ]);
    expect(await rows('SELECT target_id, last_read_message_id FROM read_states WHERE user_id = $1', [alice.id])).toEqual([
      { target_id: fresh, last_read_message_id: later },
    ]);
    expect(await rows('SELECT conversation_id FROM notifications WHERE user_id = $1', [alice.id])).toEqual([{ conversation_id: fresh }]);
    expect(await rows('SELECT conversation_id, state FROM calls WHERE id = $1', [ring.body.id])).toEqual([
      { conversation_id: fresh, state: 'ringing' },
    ]);
    const list = (await h.call(alice, 'GET', '/v1/dm/conversations')).body as { id: string }[];
    expect(list.map((c) => c.id)).toEqual([fresh]);
  });

  it('merges every old spelling of a pair at once into the oldest, keeping the furthest read mark', async () => {
    const [gina, hank] = [await h.addUser(), await h.addUser()];
    const spellings = [
      await conversationOfOldKey(gina, hank),
      await conversationOfOldKey(hank, gina),
      await conversationOfOldKey(gina, hank, true),
    ];
    const [first, second, third] = spellings as [string, string, string];
    const [inFirst, inSecond, inThird] = [
      await post(hank, first, 'one'),
      await post(hank, second, 'two'),
      await post(hank, third, 'three'),
    ];
    for (const [conversation, message] of [
      [first, inFirst],
      [third, inThird],
      [second, inSecond],
    ]) {
      expect((await h.call(gina, 'PUT', `/v1/dm/conversations/${conversation}/ack`, { messageId: message })).status).toBe(200);
    }

    await rows(migration);

    const kept = await rows('SELECT id, pair_key FROM conversations WHERE id = ANY($1)', [spellings]);
    expect(kept).toEqual([{ id: first, pair_key: [gina.id, hank.id].sort().join(':') }]);
    expect(await rows('SELECT target_id, last_read_message_id FROM read_states WHERE user_id = $1', [gina.id])).toEqual([
      { target_id: first, last_read_message_id: inThird },
    ]);
    const page = await h.call(gina, 'GET', `/v1/dm/conversations/${first}/messages`);
    expect(page.body.map((m: { id: string }) => m.id)).toEqual([inThird, inSecond, inFirst]);
  });

  it('keys a lone conversation of an old key in lower case, so that opening it again finds it', async () => {
    const [carol, dave] = [await h.addUser(), await h.addUser()];
    const old = await conversationOfOldKey(carol, dave);

    await rows(migration);

    expect(await rows('SELECT pair_key FROM conversations WHERE id = $1', [old])).toEqual([
      { pair_key: [carol.id, dave.id].sort().join(':') },
    ]);
    const opened = await h.call(dave, 'POST', '/v1/dm/conversations', { userIds: [carol.id] });
    expect([opened.status, opened.body.id]).toEqual([200, old]);
  });

  it('ends a live call of the merged conversation when the kept one has its own (one live call per conversation)', async () => {
    const [erin, frank] = [await h.addUser(), await h.addUser()];
    const old = await conversationOfOldKey(erin, frank);
    const fresh = (await h.call(erin, 'POST', '/v1/dm/conversations', { userIds: [frank.id] })).body.id as string;
    const [oldRing, freshRing] = [
      await h.call(frank, 'POST', `/v1/dm/conversations/${old}/call`),
      await h.call(erin, 'POST', `/v1/dm/conversations/${fresh}/call`),
    ];
    expect([oldRing.status, freshRing.status]).toEqual([201, 201]);

    await rows(migration);

    const calls = await rows('SELECT id, conversation_id, state, end_reason FROM calls WHERE id = ANY($1) ORDER BY state', [
      [oldRing.body.id, freshRing.body.id],
    ]);
    expect(calls).toEqual([
      { id: oldRing.body.id, conversation_id: fresh, state: 'ended', end_reason: 'missed' },
      { id: freshRing.body.id, conversation_id: fresh, state: 'ringing', end_reason: null },
    ]);
  });
});
