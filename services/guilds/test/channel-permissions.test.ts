import { GUILDS_RPC, Permission, type PermissionName, toMask } from '@chat/contracts';
import { requestRpc } from '@chat/kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId, startGuilds } from './harness.ts';

const g = await startGuilds();
afterAll(() => g.close());

type Decision = { permission: PermissionName; granted: boolean; source: string; roleId: string | null };
const [owner, member, moderator, admin, outsider] = [newId(), newId(), newId(), newId(), newId()];
let server: { id: string };
let channel: { id: string };
let muted: { id: string };
let helper: { id: string };
let adminRole: { id: string };

const newRole = async (permissions: bigint) =>
  (await g.call(owner, 'POST', `/v1/servers/${server.id}/roles`, { permissions: toMask(permissions) })).body as { id: string };
const assign = (userId: string, roleId: string) => g.call(owner, 'PUT', `/v1/servers/${server.id}/members/${userId}/roles/${roleId}`);
const override = (channelId: string, target: { roleId: string } | { userId: string }, allow: bigint, deny: bigint) =>
  g.call(owner, 'PUT', `/v1/channels/${channelId}/permissions`, { ...target, allowBits: toMask(allow), denyBits: toMask(deny) });
const decisionOf = (body: { explanation: Decision[] }, permission: PermissionName) =>
  body.explanation.find((d) => d.permission === permission);

beforeAll(async () => {
  server = (await g.call(owner, 'POST', '/v1/servers', { name: 'Explained' })).body;
  const invite = (await g.call(owner, 'POST', `/v1/servers/${server.id}/invites`, {})).body;
  for (const u of [member, moderator, admin]) expect((await g.call(u, 'POST', `/v1/invites/${invite.code}/accept`)).status).toBe(200);
  channel = (await g.call(owner, 'POST', `/v1/servers/${server.id}/channels`, { name: 'explained', channelType: 'text' })).body;
  muted = await newRole(0n);
  helper = await newRole(Permission.MANAGE_MESSAGES);
  adminRole = await newRole(Permission.ADMINISTRATOR);
  const moderation = await newRole(Permission.MANAGE_ROLES);
  await assign(member, muted.id);
  await assign(member, helper.id);
  await assign(moderator, moderation.id);
  await assign(admin, adminRole.id);
  expect((await override(channel.id, { roleId: muted.id }, 0n, Permission.SEND_MESSAGES)).status).toBe(200);
  expect((await override(channel.id, { roleId: server.id }, 0n, Permission.ADD_REACTIONS)).status).toBe(200);
  expect((await override(channel.id, { userId: member }, Permission.MANAGE_WEBHOOKS, Permission.ATTACH_FILES)).status).toBe(200);
});

describe('GET channels/{id}/permissions/@me?explain=true', () => {
  it('answers the mask and, for every permission bit, its verdict and what decided it', async () => {
    const res = await g.call(member, 'GET', `/v1/channels/${channel.id}/permissions/@me?explain=true`);
    expect(res.status).toBe(200);
    const mask = BigInt(res.body.permissions);
    expect(res.body.explanation).toHaveLength(Object.keys(Permission).length);
    for (const d of res.body.explanation as Decision[]) {
      expect(d.granted, d.permission).toBe((mask & Permission[d.permission]) !== 0n);
    }
    expect(decisionOf(res.body, 'VIEW_CHANNEL')).toEqual({ permission: 'VIEW_CHANNEL', granted: true, source: 'everyone', roleId: null });
    expect(decisionOf(res.body, 'MANAGE_MESSAGES')).toMatchObject({ granted: true, source: 'role', roleId: helper.id });
    expect(decisionOf(res.body, 'SEND_MESSAGES')).toMatchObject({ granted: false, source: 'roleOverride', roleId: muted.id });
    expect(decisionOf(res.body, 'ADD_REACTIONS')).toMatchObject({ granted: false, source: 'everyoneOverride', roleId: null });
    expect(decisionOf(res.body, 'ATTACH_FILES')).toMatchObject({ granted: false, source: 'memberOverride' });
    expect(decisionOf(res.body, 'MANAGE_WEBHOOKS')).toMatchObject({ granted: true, source: 'memberOverride' });
    expect(decisionOf(res.body, 'BAN_MEMBERS')).toMatchObject({ granted: false, source: 'none', roleId: null });
  });

  it('agrees with the mask that the routes enforce and that other services are told', async () => {
    const explained = (await g.call(member, 'GET', `/v1/channels/${channel.id}/permissions/@me?explain=true`)).body;
    const plain = await g.call(member, 'GET', `/v1/channels/${channel.id}/permissions/@me`);
    expect(plain.body).toEqual({ permissions: explained.permissions });
    const rpc = await requestRpc<{ permissions: number }>(g.runtime.bus, GUILDS_RPC.channelPermissions, {
      channelId: channel.id,
      userId: member,
    });
    expect(rpc.permissions).toBe(explained.permissions);
    expect(decisionOf(explained, 'SEND_MESSAGES')?.granted).toBe(false);
    expect((await g.call(member, 'POST', `/v1/channels/${channel.id}/messages`, { content: 'hi' })).status).toBe(403);
  });

  it('names the owner, and ADMINISTRATOR with the role that carries it', async () => {
    const mine = (await g.call(owner, 'GET', `/v1/channels/${channel.id}/permissions/@me?explain=true`)).body;
    expect(new Set(mine.explanation.map((d: Decision) => `${d.granted}:${d.source}`))).toEqual(new Set(['true:owner']));
    const admins = (await g.call(admin, 'GET', `/v1/channels/${channel.id}/permissions/@me?explain=true`)).body;
    expect(admins.explanation.every((d: Decision) => d.granted && d.source === 'administrator' && d.roleId === adminRole.id)).toBe(true);
  });

  it('refuses a bad explain value (400) and a channel the caller cannot view (404)', async () => {
    const bad = await g.call(member, 'GET', `/v1/channels/${channel.id}/permissions/@me?explain=yes`);
    expect(bad.status).toBe(400);
    expect(bad.body).toEqual({ error: expect.any(String) });
    expect((await g.call(outsider, 'GET', `/v1/channels/${channel.id}/permissions/@me?explain=true`)).status).toBe(404);
  });
});

describe('GET channels/{id}/permissions/members/{userId}', () => {
  it('explains another member to a caller with MANAGE_ROLES, including why they cannot view the channel', async () => {
    const closed = (await g.call(owner, 'POST', `/v1/servers/${server.id}/channels`, { name: 'closed', channelType: 'text' })).body;
    await override(closed.id, { roleId: muted.id }, 0n, Permission.VIEW_CHANNEL);
    const res = await g.call(moderator, 'GET', `/v1/channels/${closed.id}/permissions/members/${member}?explain=true`);
    expect(res.status).toBe(200);
    expect(res.body.permissions).toBe(0);
    expect(decisionOf(res.body, 'VIEW_CHANNEL')).toMatchObject({ granted: false, source: 'roleOverride', roleId: muted.id });
    expect(decisionOf(res.body, 'SEND_MESSAGES')).toMatchObject({ granted: false, source: 'noViewChannel' });
    expect(res.body.explanation.every((d: Decision) => !d.granted)).toBe(true);

    const plain = await g.call(moderator, 'GET', `/v1/channels/${channel.id}/permissions/members/${member}`);
    expect(plain.body).toEqual({
      permissions: (await g.call(member, 'GET', `/v1/channels/${channel.id}/permissions/@me`)).body.permissions,
    });
  });

  it('says "hidden" for a member the channel is hidden from', async () => {
    const hidden = (await g.call(owner, 'POST', `/v1/servers/${server.id}/channels`, { name: 'hidden', channelType: 'text' })).body;
    await g.call(owner, 'PATCH', `/v1/channels/${hidden.id}`, { isHidden: true });
    // The moderator lacks MANAGE_CHANNELS, so to them it does not exist; the owner sees it.
    expect((await g.call(moderator, 'GET', `/v1/channels/${hidden.id}/permissions/members/${member}`)).status).toBe(404);
    const res = await g.call(owner, 'GET', `/v1/channels/${hidden.id}/permissions/members/${member}?explain=true`);
    expect(res.status).toBe(200);
    expect(res.body.permissions).toBe(0);
    expect(decisionOf(res.body, 'VIEW_CHANNEL')).toMatchObject({ granted: false, source: 'hidden' });
  });

  it('needs MANAGE_ROLES (403), a member (404) and a channel the caller can view (404)', async () => {
    const denied = await g.call(member, 'GET', `/v1/channels/${channel.id}/permissions/members/${moderator}?explain=true`);
    expect(denied.status).toBe(403);
    expect(denied.body).toEqual({ error: expect.any(String) });
    expect((await g.call(moderator, 'GET', `/v1/channels/${channel.id}/permissions/members/${outsider}`)).status).toBe(404);
    expect((await g.call(moderator, 'GET', `/v1/channels/${newId()}/permissions/members/${member}`)).status).toBe(404);
    expect((await g.call(outsider, 'GET', `/v1/channels/${channel.id}/permissions/members/${member}`)).status).toBe(404);
  });
});
