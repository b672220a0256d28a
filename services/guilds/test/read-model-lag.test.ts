import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId, startGuilds } from './harness.ts';

// The harness serves auth's real answer to rpc.auth.user.lookup; here the users consumer is paused.
const g = await startGuilds();
afterAll(() => g.close());

const readModelRow = async (id: string) => (await g.db.query('SELECT id, username, display_name FROM users WHERE id = $1', [id])).rows[0];

const owner = newId();
const member = newId();
let server: { id: string };

beforeAll(async () => {
  await g.pauseConsumers();
  server = (await g.call(owner, 'POST', '/v1/servers', { name: 'Lag', isPublic: true })).body;
  expect((await g.call(member, 'POST', `/v1/servers/${server.id}/join`)).status).toBe(200);
});

describe('a user the read-model has not heard of yet (users consumer paused)', () => {
  it('is asked of auth over the bus, stored, and banned', async () => {
    const fresh = await g.auth.register();
    expect(await readModelRow(fresh.id)).toBeUndefined();
    const res = await g.call(owner, 'PUT', `/v1/servers/${server.id}/bans/${fresh.id}`, { reason: 'spam' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ userId: fresh.id, username: fresh.username, displayName: 'Fresh' });
    expect(await readModelRow(fresh.id)).toEqual({ id: fresh.id, username: fresh.username, display_name: 'Fresh' });
    expect((await g.db.query('SELECT 1 FROM bans WHERE server_id = $1 AND user_id = $2', [server.id, fresh.id])).rowCount).toBe(1);
  });

  it('stays 404 only when auth does not know the user either, changing nothing', async () => {
    const ghost = randomUUID();
    const res = await g.call(owner, 'PUT', `/v1/servers/${server.id}/bans/${ghost}`, {});
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: 'User not found' });
    expect(await readModelRow(ghost)).toBeUndefined();
    expect((await g.db.query('SELECT 1 FROM bans WHERE user_id = $1', [ghost])).rowCount).toBe(0);
  });

  it('is not asked about for a caller who may not ban (403 first)', async () => {
    const fresh = await g.auth.register();
    expect((await g.call(member, 'PUT', `/v1/servers/${server.id}/bans/${fresh.id}`, {})).status).toBe(403);
    expect(await readModelRow(fresh.id)).toBeUndefined();
  });
});
