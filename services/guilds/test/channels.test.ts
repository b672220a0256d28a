import { Permission, toMask } from '@chat/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId, startGuilds } from './harness.ts';

const g = await startGuilds();
afterAll(() => g.close());

const owner = newId();
const member = newId();
let server: { id: string };
let other: { id: string };

beforeAll(async () => {
  server = (await g.call(owner, 'POST', '/v1/servers', { name: 'Channels', isPublic: true })).body;
  other = (await g.call(owner, 'POST', '/v1/servers', { name: 'Other one' })).body;
  expect((await g.call(member, 'POST', `/v1/servers/${server.id}/join`)).status).toBe(200);
});

const categoriesOf = async (serverId: string) =>
  (await g.db.query('SELECT id, name FROM categories WHERE server_id = $1 ORDER BY position', [serverId])).rows;

describe('categories', () => {
  it('creates at the end, renames, lists by position; needs MANAGE_CHANNELS', async () => {
    const created = await g.call(owner, 'POST', `/v1/servers/${server.id}/categories`, { name: 'Second' });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ serverId: server.id, name: 'Second', position: 1 });
    const renamed = await g.call(owner, 'PATCH', `/v1/servers/${server.id}/categories/${created.body.id}`, { name: 'Renamed' });
    expect(renamed.body.name).toBe('Renamed');
    const list = await g.call(member, 'GET', `/v1/servers/${server.id}/categories`);
    expect(list.body.map((c: { name: string }) => c.name)).toEqual(['General', 'Renamed']);

    expect((await g.call(member, 'POST', `/v1/servers/${server.id}/categories`, { name: 'Nope' })).status).toBe(403);
    expect((await g.call(owner, 'POST', `/v1/servers/${server.id}/categories`, { name: 'x'.repeat(101) })).status).toBe(400);
    expect((await g.call(owner, 'PATCH', `/v1/servers/${server.id}/categories/${newId()}`, { name: 'Ghost' })).status).toBe(404);
    expect((await g.call(newId(), 'GET', `/v1/servers/${other.id}/categories`)).status).toBe(404);
    expect((await categoriesOf(server.id)).map((c) => c.name)).toEqual(['General', 'Renamed']);
  });

  it('reorders only with exactly the server’s set of ids; anything else is 400 and changes nothing', async () => {
    const third = (await g.call(owner, 'POST', `/v1/servers/${server.id}/categories`, { name: 'Third' })).body;
    const before = await categoriesOf(server.id);
    const ids = before.map((c) => c.id);
    const foreign = (await categoriesOf(other.id))[0].id;
    for (const categoryIds of [ids.slice(1), [...ids, newId()], [ids[0], ids[0], ids[1]], [...ids.slice(1), foreign], []]) {
      const res = await g.call(owner, 'PATCH', `/v1/servers/${server.id}/categories/positions`, { categoryIds });
      expect(res.status, JSON.stringify(categoryIds)).toBe(400);
    }
    expect(await categoriesOf(server.id)).toEqual(before);
    expect(
      (await g.call(member, 'PATCH', `/v1/servers/${server.id}/categories/positions`, { categoryIds: [...ids].reverse() })).status,
    ).toBe(403);

    const reversed = [...ids].reverse();
    const res = await g.call(owner, 'PATCH', `/v1/servers/${server.id}/categories/positions`, { categoryIds: reversed });
    expect(res.status).toBe(200);
    expect(res.body.map((c: { id: string; position: number }) => [c.id, c.position])).toEqual(reversed.map((id, i) => [id, i]));
    expect((await categoriesOf(server.id)).map((c) => c.id)).toEqual(reversed);
    expect(third.id).toBe(reversed[0]);
  });

  it('deletes a category and keeps its channels, uncategorised', async () => {
    const category = (await g.call(owner, 'POST', `/v1/servers/${server.id}/categories`, { name: 'Doomed' })).body;
    const channel = (
      await g.call(owner, 'POST', `/v1/servers/${server.id}/channels`, { name: 'keep-me', channelType: 'text', categoryId: category.id })
    ).body;
    expect((await g.call(member, 'DELETE', `/v1/servers/${server.id}/categories/${category.id}`)).status).toBe(403);
    expect((await g.call(owner, 'DELETE', `/v1/servers/${server.id}/categories/${category.id}`)).status).toBe(204);
    expect((await g.call(owner, 'GET', `/v1/channels/${channel.id}`)).body.categoryId).toBeNull();
    expect((await g.call(owner, 'DELETE', `/v1/servers/${server.id}/categories/${category.id}`)).status).toBe(404);
  });
});

describe('channels', () => {
  it('creates with every Channel field and the defaults, last in its category', async () => {
    const category = (await categoriesOf(server.id)).find((c) => c.name === 'General')!;
    const res = await g.call(owner, 'POST', `/v1/servers/${server.id}/channels`, {
      name: 'news',
      channelType: 'text',
      categoryId: category.id,
      topic: 'Updates',
    });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.any(String),
      serverId: server.id,
      categoryId: category.id,
      name: 'news',
      topic: 'Updates',
      channelType: 'text',
      position: 2,
      isNsfw: false,
      slowmodeSeconds: 0,
      ownerId: null,
      isTemporary: false,
      isLocked: false,
      isHidden: false,
      userLimit: 0,
      musicLocked: false,
      createdAt: expect.any(String),
    });
    expect((await g.outbox('guilds.channel.created')).some((e) => e.data.id === res.body.id)).toBe(true);
  });

  it('refuses unknown types, over-long fields, a category of another server, and members without MANAGE_CHANNELS', async () => {
    const foreignCategory = (await categoriesOf(other.id))[0].id;
    const count = async () => Number((await g.db.query('SELECT count(*) n FROM channels WHERE server_id = $1', [server.id])).rows[0].n);
    const before = await count();
    for (const body of [
      { name: 'x', channelType: 'stage' },
      { name: '', channelType: 'text' },
      { name: 'x'.repeat(101), channelType: 'text' },
      { name: 'x', channelType: 'text', topic: 'x'.repeat(1025) },
      { name: 'x', channelType: 'text', categoryId: foreignCategory },
      { name: 'x', channelType: 'text', categoryId: 'bad' },
    ]) {
      expect((await g.call(owner, 'POST', `/v1/servers/${server.id}/channels`, body)).status, JSON.stringify(body)).toBe(400);
    }
    expect((await g.call(member, 'POST', `/v1/servers/${server.id}/channels`, { name: 'x', channelType: 'text' })).status).toBe(403);
    expect(await count()).toBe(before);
  });

  it('patches the allowed fields within their limits', async () => {
    const voice = (await g.call(owner, 'POST', `/v1/servers/${server.id}/channels`, { name: 'talk', channelType: 'voice' })).body;
    const text = (await g.call(owner, 'POST', `/v1/servers/${server.id}/channels`, { name: 'chat', channelType: 'text' })).body;
    const ok = await g.call(owner, 'PATCH', `/v1/channels/${voice.id}`, {
      name: 'Talk',
      userLimit: 5,
      isLocked: true,
      musicLocked: true,
    });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ name: 'Talk', userLimit: 5, isLocked: true, musicLocked: true });
    const textOk = await g.call(owner, 'PATCH', `/v1/channels/${text.id}`, { slowmodeSeconds: 21600, isNsfw: true, topic: null });
    expect(textOk.body).toMatchObject({ slowmodeSeconds: 21600, isNsfw: true, topic: null });
    for (const [id, body] of [
      [voice.id, { userLimit: 100 }],
      [text.id, { userLimit: 3 }],
      [text.id, { slowmodeSeconds: 21601 }],
      [text.id, { categoryId: (await categoriesOf(other.id))[0].id }],
      [text.id, { name: 'x'.repeat(101) }],
    ] as const) {
      expect((await g.call(owner, 'PATCH', `/v1/channels/${id}`, body)).status, JSON.stringify(body)).toBe(400);
    }
    expect((await g.call(member, 'PATCH', `/v1/channels/${text.id}`, { name: 'mine' })).status).toBe(403);
    expect((await g.call(owner, 'GET', `/v1/channels/${text.id}`)).body).toMatchObject({
      name: 'chat',
      slowmodeSeconds: 21600,
      userLimit: 0,
    });
    expect((await g.call(member, 'DELETE', `/v1/channels/${text.id}`)).status).toBe(403);
    expect((await g.call(owner, 'DELETE', `/v1/channels/${text.id}`)).status).toBe(204);
    expect((await g.call(owner, 'GET', `/v1/channels/${text.id}`)).status).toBe(404);
  });
});

describe('channel permission overrides', () => {
  it('hide a channel from a member everywhere once VIEW_CHANNEL is denied, and give it back when removed', async () => {
    const secret = (await g.call(owner, 'POST', `/v1/servers/${server.id}/channels`, { name: 'secret', channelType: 'text' })).body;
    const put = await g.call(owner, 'PUT', `/v1/channels/${secret.id}/permissions`, {
      roleId: server.id,
      allowBits: 0,
      denyBits: toMask(Permission.VIEW_CHANNEL),
    });
    expect(put.status).toBe(200);
    expect(put.body).toEqual({
      id: expect.any(String),
      channelId: secret.id,
      roleId: server.id,
      userId: null,
      allowBits: 0,
      denyBits: 1024,
      createdAt: expect.any(String),
    });

    expect((await g.call(member, 'GET', `/v1/channels/${secret.id}`)).status).toBe(404);
    expect((await g.call(member, 'GET', `/v1/channels/${secret.id}/permissions/@me`)).status).toBe(404);
    expect((await g.call(member, 'GET', `/v1/channels/${secret.id}/permissions`)).status).toBe(404);
    const visible = (await g.call(member, 'GET', `/v1/servers/${server.id}/channels`)).body.map((c: { id: string }) => c.id);
    expect(visible).not.toContain(secret.id);
    expect((await g.call(owner, 'GET', `/v1/channels/${secret.id}`)).status).toBe(200);

    // A member override that allows VIEW_CHANNEL comes last and wins over the @everyone deny.
    const mine = await g.call(owner, 'PUT', `/v1/channels/${secret.id}/permissions`, {
      userId: member,
      allowBits: toMask(Permission.VIEW_CHANNEL),
      denyBits: toMask(Permission.SEND_MESSAGES),
    });
    expect(mine.status).toBe(200);
    const mask = await g.call(member, 'GET', `/v1/channels/${secret.id}/permissions/@me`);
    expect(BigInt(mask.body.permissions) & Permission.VIEW_CHANNEL).toBe(Permission.VIEW_CHANNEL);
    expect(BigInt(mask.body.permissions) & Permission.SEND_MESSAGES).toBe(0n);

    const list = await g.call(owner, 'GET', `/v1/channels/${secret.id}/permissions`);
    expect(list.body).toHaveLength(2);
    expect((await g.call(owner, 'DELETE', `/v1/channels/${secret.id}/permissions/${mine.body.id}`)).status).toBe(204);
    expect((await g.call(member, 'GET', `/v1/channels/${secret.id}`)).status).toBe(404);
    expect((await g.call(owner, 'DELETE', `/v1/channels/${secret.id}/permissions/${put.body.id}`)).status).toBe(204);
    expect((await g.call(member, 'GET', `/v1/channels/${secret.id}`)).status).toBe(200);
    expect((await g.outbox('guilds.override.deleted')).length).toBeGreaterThanOrEqual(2);
  });

  it('replaces the override of the same target instead of adding one', async () => {
    const channel = (await g.call(owner, 'POST', `/v1/servers/${server.id}/channels`, { name: 'replace', channelType: 'text' })).body;
    const first = await g.call(owner, 'PUT', `/v1/channels/${channel.id}/permissions`, {
      userId: member,
      allowBits: 0,
      denyBits: toMask(Permission.ADD_REACTIONS),
    });
    const second = await g.call(owner, 'PUT', `/v1/channels/${channel.id}/permissions`, {
      userId: member,
      allowBits: 0,
      denyBits: toMask(Permission.ATTACH_FILES),
    });
    expect(second.body.id).toBe(first.body.id);
    expect(second.body.denyBits).toBe(toMask(Permission.ATTACH_FILES));
    expect((await g.call(owner, 'GET', `/v1/channels/${channel.id}/permissions`)).body).toHaveLength(1);
  });

  it('refuses a body naming both or neither target, a role or user outside the server, and members without MANAGE_ROLES', async () => {
    const channel = (await g.call(owner, 'POST', `/v1/servers/${server.id}/channels`, { name: 'strict', channelType: 'text' })).body;
    for (const body of [
      { allowBits: 0, denyBits: 0 },
      { roleId: server.id, userId: member, allowBits: 0, denyBits: 0 },
      { roleId: other.id, allowBits: 0, denyBits: 0 },
      { userId: newId(), allowBits: 0, denyBits: 0 },
      { roleId: server.id, allowBits: -1, denyBits: 0 },
      { roleId: server.id, allowBits: 1024, denyBits: 1024 },
    ]) {
      expect((await g.call(owner, 'PUT', `/v1/channels/${channel.id}/permissions`, body)).status, JSON.stringify(body)).toBe(400);
    }
    expect(
      (await g.call(member, 'PUT', `/v1/channels/${channel.id}/permissions`, { roleId: server.id, allowBits: 0, denyBits: 1024 })).status,
    ).toBe(403);
    expect((await g.call(owner, 'DELETE', `/v1/channels/${channel.id}/permissions/${newId()}`)).status).toBe(404);
    expect(Number((await g.db.query('SELECT count(*) n FROM channel_overrides WHERE channel_id = $1', [channel.id])).rows[0].n)).toBe(0);
  });
});
