import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGuilds } from './harness.ts';

// Creating POSTs retried with the same Idempotency-Key, as a client does after a 502, 504 or a
// dropped connection: one write, one event, the first answer again.
const g = await startGuilds();
afterAll(() => g.close());

let owner: string;
let server: { id: string };
let channel: string;
let hook: { id: string; token: string };
beforeAll(async () => {
  owner = await g.knownUser('owner');
  server = (await g.call(owner, 'POST', '/v1/servers', { name: 'Retries' })).body;
  const channels = (await g.call(owner, 'GET', `/v1/servers/${server.id}/channels`)).body as { id: string; channelType: string }[];
  channel = channels.find((c) => c.channelType === 'text')!.id;
  hook = (await g.call(owner, 'POST', `/v1/channels/${channel}/webhooks`, { name: 'CI' })).body;
});

const withKey = (key: string) => ({ 'idempotency-key': key });
const count = async (sql: string, params: unknown[]) => Number((await g.db.query(sql, params)).rows[0].n);
const messagesWith = (content: string) => count('SELECT count(*) AS n FROM messages WHERE content = $1', [content]);
const eventsWith = (content: string) =>
  count("SELECT count(*) AS n FROM outbox WHERE subject = 'guilds.message.created' AND payload->'data'->>'content' = $1", [content]);

describe('Idempotency-Key on channel messages', () => {
  it('answers a retry with the same message and status, and stores one row and one event', async () => {
    const key = crypto.randomUUID();
    const url = `/v1/channels/${channel}/messages`;
    const first = await g.call(owner, 'POST', url, { content: 'exactly once' }, withKey(key));
    const retry = await g.call(owner, 'POST', url, { content: 'exactly once' }, withKey(key));
    expect(first.status).toBe(201);
    expect(retry.status).toBe(201);
    expect(retry.body).toEqual(first.body);
    expect(retry.headers['idempotent-replayed']).toBe('true');
    expect(await messagesWith('exactly once')).toBe(1);
    expect(await eventsWith('exactly once')).toBe(1);
  });

  it('answers 422 to the same key with another body, and stores nothing more', async () => {
    const key = crypto.randomUUID();
    const url = `/v1/channels/${channel}/messages`;
    expect((await g.call(owner, 'POST', url, { content: 'first body' }, withKey(key))).status).toBe(201);
    const other = await g.call(owner, 'POST', url, { content: 'second body' }, withKey(key));
    expect(other.status).toBe(422);
    expect(other.body).toEqual({ error: 'This Idempotency-Key was already used for a different request' });
    expect(await messagesWith('second body')).toBe(0);
  });

  it('answers 409 while a request with the key is still running, then the retry goes through once', async () => {
    const key = crypto.randomUUID();
    const url = `/v1/channels/${channel}/messages`;
    // Holds the key's lock as a request in flight does.
    const holder = new pg.Client({ connectionString: g.runtime.databaseUrl });
    await holder.connect();
    try {
      await holder.query('SELECT pg_advisory_lock(727003, hashtext($1))', [`user:${owner}\n${key}`]);
      const busy = await g.call(owner, 'POST', url, { content: 'in flight' }, withKey(key));
      expect(busy.status).toBe(409);
      expect(busy.body).toEqual({ error: 'A request with this Idempotency-Key is still being processed; retry later' });
      expect(await messagesWith('in flight')).toBe(0);
    } finally {
      await holder.end();
    }
    expect((await g.call(owner, 'POST', url, { content: 'in flight' }, withKey(key))).status).toBe(201);
    expect(await messagesWith('in flight')).toBe(1);
  });

  it('lets parallel retries of one key write once: one 201, the others the same answer or 409', async () => {
    const key = crypto.randomUUID();
    const url = `/v1/channels/${channel}/messages`;
    const answers = await Promise.all(Array.from({ length: 6 }, () => g.call(owner, 'POST', url, { content: 'raced' }, withKey(key))));
    const created = answers.filter((a) => a.status === 201);
    expect(created.length).toBeGreaterThanOrEqual(1);
    for (const a of created) expect(a.body).toEqual(created[0]!.body);
    for (const a of answers.filter((x) => x.status !== 201)) expect(a).toMatchObject({ status: 409, body: { error: expect.any(String) } });
    expect(await messagesWith('raced')).toBe(1);
  });
});

describe('Idempotency-Key on other creating POSTs', () => {
  it('executes a webhook once per key (keys belong to the webhook)', async () => {
    const key = crypto.randomUUID();
    const url = `/v1/webhooks/${hook.id}/${hook.token}?wait=true`;
    const first = await g.call(null, 'POST', url, { content: 'deploy once' }, withKey(key));
    const retry = await g.call(null, 'POST', url, { content: 'deploy once' }, withKey(key));
    expect(first.status).toBe(200);
    expect(retry.body).toEqual(first.body);
    expect(await messagesWith('deploy once')).toBe(1);
    // A wrong token with a used key is the wrong token's 401: it learns nothing of the keys.
    const forged = await g.call(
      null,
      'POST',
      `/v1/webhooks/${hook.id}/${'x'.repeat(hook.token.length)}?wait=true`,
      { content: 'deploy once' },
      withKey(key),
    );
    expect({ status: forged.status, body: forged.body }).toEqual({ status: 401, body: { error: 'Unknown webhook or invalid token' } });
  });

  it('creates one webhook per key, keeping neither its token nor the key in the table, and replays the token', async () => {
    const key = crypto.randomUUID();
    const url = `/v1/channels/${channel}/webhooks`;
    const first = await g.call(owner, 'POST', url, { name: 'Sealed' }, withKey(key));
    expect(first.status).toBe(201);
    expect(first.body.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const stored = JSON.stringify((await g.db.query('SELECT * FROM idempotency_keys')).rows);
    expect(stored).not.toContain(first.body.token);
    expect(stored).not.toContain(key);
    const retry = await g.call(owner, 'POST', url, { name: 'Sealed' }, withKey(key));
    expect(retry.status).toBe(201);
    expect(retry.headers['idempotent-replayed']).toBe('true');
    expect(retry.body).toEqual(first.body);
    const other = await g.call(owner, 'POST', url, { name: 'Other' }, withKey(key));
    expect(other).toMatchObject({ status: 422, body: { error: 'This Idempotency-Key was already used for a different request' } });
    expect(await count("SELECT count(*) AS n FROM webhooks WHERE name IN ('Sealed', 'Other')", [])).toBe(1);
  });

  it('creates one server, one channel and one invite per key', async () => {
    const serverKey = crypto.randomUUID();
    const a = await g.call(owner, 'POST', '/v1/servers', { name: 'Once' }, withKey(serverKey));
    const b = await g.call(owner, 'POST', '/v1/servers', { name: 'Once' }, withKey(serverKey));
    expect(b.body).toEqual(a.body);
    expect(await count("SELECT count(*) AS n FROM servers WHERE name = 'Once'", [])).toBe(1);

    const channelKey = crypto.randomUUID();
    const channels = `/v1/servers/${server.id}/channels`;
    const c1 = await g.call(owner, 'POST', channels, { name: 'once', channelType: 'text' }, withKey(channelKey));
    const c2 = await g.call(owner, 'POST', channels, { name: 'once', channelType: 'text' }, withKey(channelKey));
    expect(c1.status).toBe(201);
    expect(c2.body).toEqual(c1.body);
    expect(await count("SELECT count(*) AS n FROM channels WHERE name = 'once'", [])).toBe(1);

    const inviteKey = crypto.randomUUID();
    const invites = `/v1/servers/${server.id}/invites`;
    const i1 = await g.call(owner, 'POST', invites, { maxUses: 3 }, withKey(inviteKey));
    const i2 = await g.call(owner, 'POST', invites, { maxUses: 3 }, withKey(inviteKey));
    expect(i1.status).toBe(201);
    expect(i2.body).toEqual(i1.body);
    expect(await count('SELECT count(*) AS n FROM invites WHERE server_id = $1', [server.id])).toBe(1);
  });
});
