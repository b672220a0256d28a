import { afterAll, describe, expect, it } from 'vitest';
import { newId, startGuilds } from './harness.ts';

/**
 * Discord's limits (docs/guilds-rules.md): one past each is a 400 that changes nothing, also when
 * the creates come at once, and what is under them can still be moved and exported then imported.
 */
const g = await startGuilds();
afterAll(() => g.close());

type Answer = Awaited<ReturnType<typeof g.call>>;

/** Runs `count` calls, `atOnce` at a time. */
async function atOnce(count: number, width: number, call: (i: number) => Promise<Answer>): Promise<Answer[]> {
  const out: Answer[] = [];
  for (let i = 0; i < count; i += width) {
    out.push(...(await Promise.all(Array.from({ length: Math.min(width, count - i) }, (_, j) => call(i + j)))));
  }
  return out;
}

/** How many answers had each status. */
function statuses(answers: Answer[]): Record<number, number> {
  const byStatus: Record<number, number> = {};
  for (const { status } of answers) byStatus[status] = (byStatus[status] ?? 0) + 1;
  return byStatus;
}

const count = async (sql: string, params: unknown[]) => (await g.db.query<{ n: number }>(sql, params)).rows[0]!.n;

async function newServer(owner: string, name: string, settings: Record<string, unknown> = {}): Promise<string> {
  const res = await g.call(owner, 'POST', '/v1/servers', { name, ...settings });
  expect(res.status).toBe(201);
  return res.body.id;
}

/** The server's template, exported and imported again by its owner. */
async function reimport(owner: string, serverId: string): Promise<Answer> {
  const exported = await g.call(owner, 'GET', `/v1/servers/${serverId}/template`);
  expect(exported.status).toBe(200);
  return g.call(owner, 'POST', '/v1/servers/import', { template: exported.body });
}

describe('limits', () => {
  it('refuses a role past 250 per server, @everyone included, also when creates come at once', async () => {
    const owner = newId();
    const serverId = await newServer(owner, 'Many roles');
    // 239 roles above @everyone written at once (one by one, each create shifts every role above it).
    await g.db.query(
      `INSERT INTO roles (id, server_id, name, permissions, position)
       SELECT gen_random_uuid(), $1, 'seed ' || i, 0, i FROM generate_series(1, 239) AS i`,
      [serverId],
    );
    const created = (await g.outbox('guilds.role.created')).length;

    const answers = await atOnce(14, 14, (i) => g.call(owner, 'POST', `/v1/servers/${serverId}/roles`, { name: `r${i}` }));

    expect(statuses(answers)).toEqual({ 201: 10, 400: 4 });
    expect(answers.find((a) => a.status === 400)?.body).toEqual({ error: 'A server has at most 250 roles, @everyone included' });
    expect(await count('SELECT count(*)::int AS n FROM roles WHERE server_id = $1', [serverId])).toBe(250);
    expect(await g.outbox('guilds.role.created')).toHaveLength(created + 10);
    // The top role moves, and the server's own export imports.
    const top = (await g.call(owner, 'GET', `/v1/servers/${serverId}/roles`)).body.at(-1);
    expect(top.position).toBe(249);
    expect((await g.call(owner, 'PATCH', `/v1/servers/${serverId}/roles/${top.id}`, { position: 248 })).status).toBe(200);
    expect((await reimport(owner, serverId)).status).toBe(201);
  }, 120_000);

  it('refuses to import 250 roles besides the @everyone it makes when the template has none', async () => {
    const roles = Array.from({ length: 250 }, (_, i) => ({ id: i + 1, name: `r${i}`, permissions: '0' }));
    const owner = newId();
    const res = await g.call(owner, 'POST', '/v1/servers/import', {
      template: { serialized_source_guild: { name: 'No everyone', roles, channels: [] } },
    });
    expect(res).toMatchObject({
      status: 400,
      body: { error: 'template.serialized_source_guild.roles: at most 250 roles, @everyone included' },
    });
    expect(await count('SELECT count(*)::int AS n FROM servers WHERE owner_id = $1', [owner])).toBe(0);
    // 249 of them are one server, with the @everyone it makes.
    const fits = await g.call(owner, 'POST', '/v1/servers/import', {
      template: { serialized_source_guild: { name: 'No everyone', roles: roles.slice(1), channels: [] } },
    });
    expect(fits.status).toBe(201);
    expect(await count('SELECT count(*)::int AS n FROM roles WHERE server_id = $1', [fits.body.server.id])).toBe(250);
  });

  it('refuses a channel or a category past 500 per server, categories included, also when creates come at once', async () => {
    const owner = newId();
    // A new server has a category and two channels: 497 more reach the limit.
    const serverId = await newServer(owner, 'Many channels');

    const answers = await atOnce(500, 12, (i) =>
      i % 50 === 0
        ? g.call(owner, 'POST', `/v1/servers/${serverId}/categories`, { name: `k${i}` })
        : g.call(owner, 'POST', `/v1/servers/${serverId}/channels`, { name: `c${i}`, channelType: 'text' }),
    );

    expect(statuses(answers)).toEqual({ 201: 497, 400: 3 });
    expect(answers.find((a) => a.status === 400)?.body).toEqual({ error: 'A server has at most 500 channels, categories included' });
    const layout =
      'SELECT (SELECT count(*) FROM channels WHERE server_id = $1)::int + (SELECT count(*) FROM categories WHERE server_id = $1)::int AS n';
    expect(await count(layout, [serverId])).toBe(500);
    const refusedCategory = await g.call(owner, 'POST', `/v1/servers/${serverId}/categories`, { name: 'one more' });
    expect(refusedCategory).toMatchObject({ status: 400, body: { error: 'A server has at most 500 channels, categories included' } });
    // A channel deleted makes room for one.
    const loose = (await g.call(owner, 'GET', `/v1/servers/${serverId}/channels`)).body.filter(
      (c: { categoryId: string | null }) => !c.categoryId,
    );
    expect((await g.call(owner, 'DELETE', `/v1/channels/${loose[0].id}`)).status).toBe(204);
    expect((await g.call(owner, 'POST', `/v1/servers/${serverId}/channels`, { name: 'room', channelType: 'voice' })).status).toBe(201);
    expect((await reimport(owner, serverId)).status).toBe(201);
  }, 120_000);

  it('refuses a permission override past 100 on one channel, also when puts come at once, and still replaces one', async () => {
    const owner = newId();
    const serverId = await newServer(owner, 'Many overrides');
    const channelId = (await g.call(owner, 'GET', `/v1/servers/${serverId}/channels`)).body[0].id;
    const { rows: roles } = await g.db.query<{ id: string }>(
      `INSERT INTO roles (id, server_id, name, permissions, position)
       SELECT gen_random_uuid(), $1, 'r' || i, 0, i FROM generate_series(1, 102) AS i RETURNING id`,
      [serverId],
    );

    const answers = await atOnce(102, 12, (i) =>
      g.call(owner, 'PUT', `/v1/channels/${channelId}/permissions`, { roleId: roles[i]!.id, allowBits: 0, denyBits: 2048 }),
    );

    expect(statuses(answers)).toEqual({ 200: 100, 400: 2 });
    expect(answers.find((a) => a.status === 400)?.body).toEqual({ error: 'A channel has at most 100 permission overrides' });
    expect(await count('SELECT count(*)::int AS n FROM channel_overrides WHERE channel_id = $1', [channelId])).toBe(100);
    const kept = answers.find((a) => a.status === 200)!.body;
    const replaced = await g.call(owner, 'PUT', `/v1/channels/${channelId}/permissions`, {
      roleId: kept.roleId,
      allowBits: 2048,
      denyBits: 0,
    });
    expect(replaced).toMatchObject({ status: 200, body: { id: kept.id, allowBits: 2048 } });
    expect((await reimport(owner, serverId)).status).toBe(201);
  }, 120_000);

  it('refuses a webhook past 15 on one channel, also when creates come at once, and a deleted one makes room', async () => {
    const owner = newId();
    const serverId = await newServer(owner, 'Many webhooks');
    const channelId = (await g.call(owner, 'GET', `/v1/servers/${serverId}/channels`)).body.find(
      (c: { channelType: string }) => c.channelType === 'text',
    ).id;

    const answers = await atOnce(17, 17, (i) => g.call(owner, 'POST', `/v1/channels/${channelId}/webhooks`, { name: `h${i}` }));

    expect(statuses(answers)).toEqual({ 201: 15, 400: 2 });
    expect(answers.find((a) => a.status === 400)?.body).toEqual({ error: 'A channel has at most 15 webhooks' });
    expect(await count('SELECT count(*)::int AS n FROM webhooks WHERE channel_id = $1', [channelId])).toBe(15);
    const kept = answers.find((a) => a.status === 201)!.body;
    expect((await g.call(owner, 'DELETE', `/v1/webhooks/${kept.id}`)).status).toBe(204);
    expect((await g.call(owner, 'POST', `/v1/channels/${channelId}/webhooks`, { name: 'room' })).status).toBe(201);
  });

  it('refuses a user a server past 100, by creating, importing or any way of joining, also when creates come at once', async () => {
    const user = newId();
    const host = newId();
    const open = await newServer(host, 'Open', { isPublic: true });
    const gated = await newServer(host, 'Gated', { isPublic: true, requireApproval: true });
    const invite = (await g.call(host, 'POST', `/v1/servers/${open}/invites`, {})).body.code;
    const request = await g.call(user, 'POST', `/v1/servers/${gated}/join-requests`, {});
    expect(request.status).toBe(201);

    const answers = await atOnce(102, 12, (i) => g.call(user, 'POST', '/v1/servers', { name: `mine ${i}` }));

    const full = { error: 'You are in 100 servers already, the most a user may be in' };
    expect(statuses(answers)).toEqual({ 201: 100, 400: 2 });
    expect(answers.find((a) => a.status === 400)?.body).toEqual(full);
    const servers = 'SELECT count(*)::int AS n FROM members WHERE user_id = $1';
    expect(await count(servers, [user])).toBe(100);
    expect(await g.call(user, 'POST', `/v1/servers/${open}/join`)).toMatchObject({ status: 400, body: full });
    expect(await g.call(user, 'POST', `/v1/invites/${invite}/accept`)).toMatchObject({ status: 400, body: full });
    const template = (await g.call(user, 'GET', `/v1/servers/${answers[0]!.body.id}/template`)).body;
    expect(await g.call(user, 'POST', '/v1/servers/import', { template })).toMatchObject({ status: 400, body: full });
    expect(await g.call(host, 'POST', `/v1/servers/${gated}/join-requests/${request.body.id}/approve`)).toMatchObject({
      status: 400,
      body: { error: 'That user is in 100 servers already, the most a user may be in' },
    });
    expect(await count(servers, [user])).toBe(100);
    // Deleting one of theirs makes room for one.
    expect((await g.call(user, 'DELETE', `/v1/servers/${answers[0]!.body.id}`)).status).toBe(204);
    expect((await g.call(user, 'POST', `/v1/invites/${invite}/accept`)).status).toBe(200);
    expect(await count(servers, [user])).toBe(100);
  }, 120_000);
});
