import { createHash } from 'node:crypto';
import { Permission, toMask } from '@chat/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId, startGuilds } from './harness.ts';

const g = await startGuilds();
afterAll(() => g.close());

let owner: string;
let member: string;
let server: { id: string };
let channel: string;
let hook: { id: string; token: string; url: string; name: string; createdAt: string };

const execute = (id: string, token: string, payload: unknown, query = '') =>
  g.call(null, 'POST', `/v1/webhooks/${id}/${token}${query}`, payload);
const messageCount = async () => Number((await g.db.query('SELECT count(*) FROM messages WHERE channel_id = $1', [channel])).rows[0].count);

beforeAll(async () => {
  [owner, member] = await Promise.all([g.knownUser('owner'), g.knownUser('member')]);
  server = (await g.call(owner, 'POST', '/v1/servers', { name: 'Hooks', isPublic: true })).body;
  expect((await g.call(member, 'POST', `/v1/servers/${server.id}/join`)).status).toBe(200);
  const channels = (await g.call(owner, 'GET', `/v1/servers/${server.id}/channels`)).body as { id: string; channelType: string }[];
  channel = channels.find((c) => c.channelType === 'text')!.id;
  const res = await g.call(owner, 'POST', `/v1/channels/${channel}/webhooks`, {
    name: 'Deploy bot',
    avatarUrl: 'https://cdn.example/bot.png',
  });
  expect(res.status).toBe(201);
  hook = res.body;
});

describe('managing webhooks', () => {
  it('creates with a 256-bit token shown once and stored only as its SHA-256', async () => {
    expect(hook).toEqual({
      id: expect.any(String),
      channelId: channel,
      serverId: server.id,
      name: 'Deploy bot',
      avatarUrl: 'https://cdn.example/bot.png',
      createdBy: owner,
      createdAt: expect.any(String),
      token: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      url: `/v1/webhooks/${hook.id}/${hook.token}`,
    });
    const row = (await g.db.query('SELECT token_hash FROM webhooks WHERE id = $1', [hook.id])).rows[0];
    expect(row.token_hash).toEqual(createHash('sha256').update(hook.token).digest());
    const dump = JSON.stringify((await g.db.query('SELECT * FROM webhooks')).rows);
    expect(dump).not.toContain(hook.token);
  });

  it('lists without tokens, and needs MANAGE_WEBHOOKS (403) in a channel the caller sees (404)', async () => {
    const list = await g.call(owner, 'GET', `/v1/channels/${channel}/webhooks`);
    expect(list.status).toBe(200);
    expect(list.body).toEqual([
      {
        id: hook.id,
        channelId: channel,
        serverId: server.id,
        name: 'Deploy bot',
        avatarUrl: 'https://cdn.example/bot.png',
        createdBy: owner,
        createdAt: hook.createdAt,
      },
    ]);
    expect(JSON.stringify(list.body)).not.toContain(hook.token);

    for (const [method, url, payload] of [
      ['GET', `/v1/channels/${channel}/webhooks`],
      ['POST', `/v1/channels/${channel}/webhooks`, { name: 'Nope' }],
      ['DELETE', `/v1/webhooks/${hook.id}`],
    ] as const) {
      const res = await g.call(member, method, url, payload);
      expect(res.status, `${method} ${url}`).toBe(403);
      expect(res.body.error).toMatch(/MANAGE_WEBHOOKS/);
      expect((await g.call(newId(), method, url, payload)).status, `stranger ${method} ${url}`).toBe(404);
    }
    expect((await g.call(owner, 'POST', `/v1/channels/${channel}/webhooks`, { name: '' })).status).toBe(400);
    for (const avatarUrl of ['not a url', 'javascript:alert(1)', 'data:image/png;base64,iVBORw0KGgo=']) {
      expect((await g.call(owner, 'POST', `/v1/channels/${channel}/webhooks`, { name: 'x', avatarUrl })).status, avatarUrl).toBe(400);
    }
    expect((await g.db.query('SELECT count(*)::int AS n FROM webhooks')).rows[0].n).toBe(1);

    // A role with MANAGE_WEBHOOKS is enough.
    const role = (
      await g.call(owner, 'POST', `/v1/servers/${server.id}/roles`, { name: 'hooks', permissions: toMask(Permission.MANAGE_WEBHOOKS) })
    ).body;
    expect((await g.call(owner, 'PUT', `/v1/servers/${server.id}/members/${member}/roles/${role.id}`)).status).toBeLessThan(300);
    expect((await g.call(member, 'GET', `/v1/channels/${channel}/webhooks`)).status).toBe(200);
  });
});

describe('executing a webhook', () => {
  it('posts without a bearer token and answers 204, as the webhook with its name and avatar', async () => {
    const res = await execute(hook.id, hook.token, { content: 'build passed @everyone' });
    expect(res.status).toBe(204);
    expect(res.body).toBeUndefined();
    const row = (await g.db.query('SELECT * FROM messages WHERE channel_id = $1 ORDER BY id DESC LIMIT 1', [channel])).rows[0];
    expect(row).toMatchObject({ content: 'build passed @everyone', webhook_id: hook.id, author_id: hook.id, author_name: 'Deploy bot' });
    expect(row.mentions).toEqual({ users: [], roles: [], everyone: false });
    const [listed] = (await g.call(member, 'GET', `/v1/channels/${channel}/messages?limit=1`)).body;
    expect(listed).toMatchObject({
      authorName: 'Deploy bot',
      authorAvatar: 'https://cdn.example/bot.png',
      webhookId: hook.id,
      authorId: hook.id,
    });
  });

  it('answers 200 with the message when ?wait=true, under the name and avatar the call gives', async () => {
    const res = await execute(
      hook.id,
      hook.token,
      { content: `ping <@${member}>`, username: 'CI', avatarUrl: 'https://cdn.example/ci.png' },
      '?wait=true',
    );
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      channelId: channel,
      serverId: server.id,
      authorId: hook.id,
      webhookId: hook.id,
      authorName: 'CI',
      authorAvatar: 'https://cdn.example/ci.png',
      content: `ping <@${member}>`,
      mentions: { users: [member], roles: [], everyone: false },
      reactions: {},
    });
    expect((await g.db.query('SELECT author_name FROM messages WHERE id = $1', [res.body.id])).rows).toEqual([{ author_name: 'CI' }]);
  });

  it('answers the same 401 to a wrong token and an unknown webhook, and posts nothing', async () => {
    const before = await messageCount();
    const wrong = await execute(hook.id, `${hook.token.slice(0, -1)}${hook.token.endsWith('A') ? 'B' : 'A'}`, { content: 'x' });
    const unknown = await execute(newId(), hook.token, { content: 'x' });
    const short = await execute(hook.id, 'x', { content: 'x' });
    for (const res of [wrong, unknown, short]) {
      expect(res.status).toBe(401);
      expect(res.body).toEqual(wrong.body);
    }
    expect(wrong.body.error).toEqual(expect.any(String));
    expect(JSON.stringify(wrong.body)).not.toContain(hook.token);
    expect(await messageCount()).toBe(before);
  });

  it('answers 400 for a bad body and stores nothing', async () => {
    const before = await messageCount();
    for (const payload of [
      {},
      { content: '' },
      { content: '  ' },
      { content: 'x'.repeat(4001) },
      { content: 'x', avatarUrl: 'nope' },
      { content: 'x', avatarUrl: 'javascript:alert(1)' },
    ]) {
      expect((await execute(hook.id, hook.token, payload)).status, JSON.stringify(payload)).toBe(400);
    }
    expect(await messageCount()).toBe(before);
  });

  it('puts the message event in the outbox, and no event or list carries a token', async () => {
    const created = (await g.outbox('guilds.message.created')).filter((e) => e.data.webhookId === hook.id);
    expect(created.length).toBeGreaterThanOrEqual(2);
    const everything = JSON.stringify((await g.db.query('SELECT payload FROM outbox')).rows);
    expect(everything).not.toContain(hook.token);
    const lists = JSON.stringify([
      (await g.call(owner, 'GET', `/v1/channels/${channel}/webhooks`)).body,
      (await g.call(owner, 'GET', `/v1/channels/${channel}/messages`)).body,
    ]);
    expect(lists).not.toContain(hook.token);
  });

  it('stops working once deleted', async () => {
    const doomed = (await g.call(owner, 'POST', `/v1/channels/${channel}/webhooks`, { name: 'Doomed' })).body;
    expect((await execute(doomed.id, doomed.token, { content: 'alive' })).status).toBe(204);
    expect((await g.call(owner, 'DELETE', `/v1/webhooks/${doomed.id}`)).status).toBe(204);
    expect((await g.call(owner, 'DELETE', `/v1/webhooks/${doomed.id}`)).status).toBe(404);
    expect((await execute(doomed.id, doomed.token, { content: 'dead' })).status).toBe(401);
    expect((await g.db.query('SELECT count(*)::int AS n FROM messages WHERE content = $1', ['dead'])).rows[0].n).toBe(0);
  });
});
