import { Permission, toMask } from '@chat/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId, startGuilds } from './harness.ts';

/**
 * A temporary channel made from a private join-to-create channel: it takes the join-to-create
 * channel's overrides, so whoever could not see or join that one cannot see or join it either.
 */

const g = await startGuilds();
afterAll(() => g.close());

const [vip, outsider] = [newId(), newId()];
let owner: string;
let serverId: string;
let jtc: { id: string };
let vipRole: string;

beforeAll(async () => {
  owner = await g.knownUser('owner');
  serverId = (await g.call(owner, 'POST', '/v1/servers', { name: 'Private rooms', isPublic: true })).body.id;
  for (const u of [vip, outsider]) expect((await g.call(u, 'POST', `/v1/servers/${serverId}/join`)).status).toBe(200);
  vipRole = (await g.call(owner, 'POST', `/v1/servers/${serverId}/roles`, { name: 'vip', permissions: 0 })).body.id;
  expect((await g.call(owner, 'PUT', `/v1/servers/${serverId}/members/${vip}/roles/${vipRole}`)).status).toBe(204);
  jtc = await g.newChannel(owner, serverId, 'vip create', 'voice');
  const private_ = toMask(Permission.VIEW_CHANNEL | Permission.CONNECT);
  const put = (body: object) => g.call(owner, 'PUT', `/v1/channels/${jtc.id}/permissions`, { allowBits: 0, denyBits: 0, ...body });
  expect((await put({ roleId: serverId, denyBits: private_ })).status).toBe(200);
  expect((await put({ roleId: vipRole, allowBits: private_ })).status).toBe(200);
  expect((await put({ userId: outsider, denyBits: toMask(Permission.SPEAK) })).status).toBe(200);
  expect((await g.call(owner, 'PATCH', `/v1/servers/${serverId}`, { jtcChannelId: jtc.id })).status).toBe(200);
});

const overridesOf = async (channelId: string) =>
  (
    await g.db.query(
      'SELECT role_id, user_id, allow_bits, deny_bits FROM channel_overrides WHERE channel_id = $1 ORDER BY role_id, user_id',
      [channelId],
    )
  ).rows;

describe('a temporary channel made from a private join-to-create channel', () => {
  it('stays private: hidden from, and not joinable by, a member who cannot see the join-to-create channel', async () => {
    expect((await g.call(outsider, 'POST', '/v1/voice/join', { channelId: jtc.id })).status).toBe(404);
    const joined = await g.call(vip, 'POST', '/v1/voice/join', { channelId: jtc.id });
    expect(joined.status).toBe(200);
    const temporary = joined.body.channel.id as string;

    const listed = (await g.call(outsider, 'GET', `/v1/servers/${serverId}/channels`)).body as { id: string }[];
    expect({
      listed: listed.some((c) => c.id === temporary),
      get: (await g.call(outsider, 'GET', `/v1/channels/${temporary}`)).status,
      join: (await g.call(outsider, 'POST', '/v1/voice/join', { channelId: temporary })).status,
    }).toEqual({ listed: false, get: 404, join: 404 });
    expect(await g.db.query('SELECT 1 FROM voice_states WHERE user_id = $1', [outsider])).toMatchObject({ rowCount: 0 });
    // The owner and the creator still see it; the creator is in it.
    expect((await g.call(owner, 'GET', `/v1/channels/${temporary}`)).status).toBe(200);
    expect((await g.call(vip, 'GET', `/v1/channels/${temporary}`)).status).toBe(200);
  });

  it('copies every override of the join-to-create channel, each with its guilds.override.updated', async () => {
    const creator = await g.newMemberOf(serverId);
    expect((await g.call(owner, 'PUT', `/v1/servers/${serverId}/members/${creator}/roles/${vipRole}`)).status).toBe(204);
    const temporary = (await g.call(creator, 'POST', '/v1/voice/join', { channelId: jtc.id })).body.channel.id as string;

    expect(await overridesOf(temporary)).toEqual(await overridesOf(jtc.id));
    const events = (await g.outbox('guilds.override.updated')).map((e) => e.data).filter((o) => o.channelId === temporary);
    const stored = (await g.call(owner, 'GET', `/v1/channels/${temporary}/permissions`)).body;
    expect(stored).toHaveLength(3);
    expect(events).toEqual(expect.arrayContaining(stored));
    expect(events).toHaveLength(3);
  });
});
