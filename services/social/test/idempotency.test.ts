import { afterAll, describe, expect, it } from 'vitest';
import { createHarness } from './harness.ts';

// Direct messages and friend requests retried with the same Idempotency-Key: one write each.
const h = await createHarness();
afterAll(() => h.close());

async function post(user: { token: string }, url: string, payload: unknown, key: string) {
  const res = await h.app.inject({
    method: 'POST',
    url,
    headers: { authorization: `Bearer ${user.token}`, 'idempotency-key': key },
    payload: payload as Record<string, unknown>,
  });
  return { status: res.statusCode, body: res.json(), replayed: res.headers['idempotent-replayed'] };
}
const count = async (sql: string, params: unknown[]) => Number((await h.runtime.pool.query(sql, params)).rows[0].n);

describe('Idempotency-Key on direct messages', () => {
  it('answers a retry with the same message, stores one row and one event; another body is 422', async () => {
    const alice = await h.addUser();
    const bob = await h.addUser();
    const conversation = (await h.call(alice, 'POST', '/v1/dm/conversations', { userIds: [bob.id] })).body.id as string;
    const key = crypto.randomUUID();
    const first = await post(alice, '/v1/dm/messages', { conversationId: conversation, content: 'once' }, key);
    const retry = await post(alice, '/v1/dm/messages', { conversationId: conversation, content: 'once' }, key);
    expect(first.status).toBe(201);
    expect(retry).toEqual({ ...first, replayed: 'true' });
    expect(await count('SELECT count(*) AS n FROM direct_messages WHERE conversation_id = $1', [conversation])).toBe(1);
    expect(
      await count("SELECT count(*) AS n FROM outbox WHERE subject = 'social.dm.created' AND payload->'data'->'message'->>'id' = $1", [
        first.body.id,
      ]),
    ).toBe(1);
    const other = await post(alice, '/v1/dm/messages', { conversationId: conversation, content: 'other' }, key);
    expect(other.status).toBe(422);
    expect(other.body).toEqual({ error: 'This Idempotency-Key was already used for a different request' });
    expect(await count('SELECT count(*) AS n FROM direct_messages WHERE conversation_id = $1', [conversation])).toBe(1);
  });
});

describe('Idempotency-Key on friend requests', () => {
  it('answers a retried request with the first answer instead of 409 "already requested"', async () => {
    const alice = await h.addUser();
    const bob = await h.addUser();
    const key = crypto.randomUUID();
    const first = await post(alice, '/v1/friends/requests', { userId: bob.id }, key);
    const retry = await post(alice, '/v1/friends/requests', { userId: bob.id }, key);
    expect(first.status).toBe(201);
    expect(retry).toEqual({ ...first, replayed: 'true' });
    const withoutKey = await h.call(alice, 'POST', '/v1/friends/requests', { userId: bob.id });
    expect(withoutKey.status).toBe(409);
  });
});

describe('Idempotency-Key on blocks', () => {
  it('answers a retried block with the first answer instead of 409 "already blocked", and writes one block and one event', async () => {
    const alice = await h.addUser();
    const bob = await h.addUser();
    const key = crypto.randomUUID();
    const first = await post(alice, '/v1/friends/block', { userId: bob.id }, key);
    const retry = await post(alice, '/v1/friends/block', { userId: bob.id }, key);
    expect(first.status).toBe(201);
    expect(retry).toEqual({ ...first, replayed: 'true' });
    expect(await count('SELECT count(*) AS n FROM blocks WHERE blocker_id = $1', [alice.id])).toBe(1);
    expect(
      await count("SELECT count(*) AS n FROM outbox WHERE subject = 'social.block.created' AND payload->'data'->>'userId' = $1", [
        alice.id,
      ]),
    ).toBe(1);
    expect((await h.call(alice, 'POST', '/v1/friends/block', { userId: bob.id })).status).toBe(409);
  });
});
