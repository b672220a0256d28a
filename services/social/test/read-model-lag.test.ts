import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness } from './harness.ts';

// The harness serves auth's real answer to rpc.auth.user.lookup; here the users consumer is paused.
const h = await createHarness();
afterAll(() => h.close());
const registeredInAuthOnly = () => h.auth.register();
const readModelRow = async (id: string) => (await h.runtime.pool.query('SELECT username FROM users WHERE id = $1', [id])).rows[0];

let me: Awaited<ReturnType<typeof h.addUser>>;
beforeAll(async () => {
  me = await h.addUser();
  await h.stopConsumer();
});

describe('a user the read-model has not heard of yet (users consumer paused)', () => {
  it('can be friended by id and by username: auth is asked and the answer stored', async () => {
    const byId = await registeredInAuthOnly();
    const res = await h.call(me, 'POST', '/v1/friends/requests', { userId: byId.id });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ status: 'pending', user: { id: byId.id, username: byId.username, displayName: 'Fresh' } });
    expect(await readModelRow(byId.id)).toEqual({ username: byId.username });

    const byName = await registeredInAuthOnly();
    const named = await h.call(me, 'POST', '/v1/friends/requests', { username: byName.username.toLowerCase() });
    expect(named.status).toBe(201);
    expect(named.body.user.id).toBe(byName.id);
  });

  it('can be DMed and blocked', async () => {
    const fresh = await registeredInAuthOnly();
    const dm = await h.call(me, 'POST', '/v1/dm/conversations', { userIds: [fresh.id] });
    expect(dm.status).toBe(201);
    expect(dm.body.participants.map((p: { id: string }) => p.id)).toContain(fresh.id);
    const other = await registeredInAuthOnly();
    expect((await h.call(me, 'POST', '/v1/friends/block', { userId: other.id })).status).toBe(201);
  });

  it('is 404 only when auth does not know the user either, and nothing is stored', async () => {
    const ghost = randomUUID();
    for (const [url, body] of [
      ['/v1/friends/requests', { userId: ghost }],
      ['/v1/friends/requests', { username: 'nobody_at_all' }],
      ['/v1/dm/conversations', { userIds: [ghost] }],
      ['/v1/friends/block', { userId: ghost }],
    ] as const) {
      const res = await h.call(me, 'POST', url, body);
      expect(res.status, `${url} ${JSON.stringify(body)}`).toBe(404);
      expect(res.body).toEqual({ error: 'User not found' });
    }
    expect(await readModelRow(ghost)).toBeUndefined();
    expect((await h.runtime.pool.query('SELECT 1 FROM friend_requests WHERE recipient_id = $1', [ghost])).rowCount).toBe(0);
  });
});
