import { GUILDS_RPC, Permission, toMask } from '@chat/contracts';
import { requestRpc } from '@chat/kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId, startGuilds } from './harness.ts';

const g = await startGuilds();
afterAll(() => g.close());

type Row = Record<string, unknown>;
const [owner, plain, manager, invited, roleHolder, mover, tempOwner] = [newId(), newId(), newId(), newId(), newId(), newId(), newId()];
let server: { id: string };
let hiddenText: { id: string };
let hiddenVoice: { id: string };

const channelIdsSeenBy = async (userId: string) =>
  (await g.call(userId, 'GET', `/v1/servers/${server.id}/channels`)).body.map((c: Row) => c.id);
const voiceUsersSeenBy = async (userId: string) =>
  (await g.call(userId, 'GET', `/v1/servers/${server.id}/voice-states`)).body.map((s: Row) => s.userId);
const grantRole = async (userId: string, permissions: bigint) => {
  const role = (await g.call(owner, 'POST', `/v1/servers/${server.id}/roles`, { permissions: toMask(permissions) })).body;
  expect((await g.call(owner, 'PUT', `/v1/servers/${server.id}/members/${userId}/roles/${role.id}`)).status).toBe(204);
  return role as { id: string };
};
const hide = async (userId: string, channelId: string, isHidden = true) =>
  g.call(userId, 'PATCH', `/v1/channels/${channelId}`, { isHidden });

beforeAll(async () => {
  server = (await g.call(owner, 'POST', '/v1/servers', { name: 'Hidden', isPublic: true })).body;
  for (const u of [plain, manager, invited, roleHolder, mover, tempOwner]) {
    expect((await g.call(u, 'POST', `/v1/servers/${server.id}/join`)).status).toBe(200);
  }
  await grantRole(manager, Permission.MANAGE_CHANNELS);
  await grantRole(mover, Permission.MOVE_MEMBERS);
  hiddenText = (await g.call(owner, 'POST', `/v1/servers/${server.id}/channels`, { name: 'staff', channelType: 'text' })).body;
  hiddenVoice = (await g.call(owner, 'POST', `/v1/servers/${server.id}/channels`, { name: 'back-room', channelType: 'voice' })).body;
  expect((await hide(owner, hiddenText.id)).body.isHidden).toBe(true);
  expect((await hide(owner, hiddenVoice.id)).status).toBe(200);
});

describe('a hidden channel', () => {
  it('does not exist for a plain member: absent from the list, 404 on every route that names it, exactly as an unknown id', async () => {
    expect(await channelIdsSeenBy(plain)).not.toContain(hiddenText.id);
    const unknown = await g.call(plain, 'GET', `/v1/channels/${newId()}`);
    for (const [method, url, body] of [
      ['GET', `/v1/channels/${hiddenText.id}`],
      ['GET', `/v1/channels/${hiddenText.id}/messages`],
      ['POST', `/v1/channels/${hiddenText.id}/messages`, { content: 'hi' }],
      ['GET', `/v1/channels/${hiddenText.id}/permissions/@me`],
      ['GET', `/v1/channels/${hiddenText.id}/pins`],
      ['POST', '/v1/voice/join', { channelId: hiddenVoice.id }],
    ] as [string, string, unknown?][]) {
      const res = await g.call(plain, method, url, body);
      expect(res.status, `${method} ${url}`).toBe(404);
      expect(res.body).toEqual(unknown.body);
    }
    expect((await g.db.query('SELECT count(*)::int AS n FROM messages WHERE channel_id = $1', [hiddenText.id])).rows[0].n).toBe(0);
    const rpc = await requestRpc<{ permissions: number }>(g.runtime.bus, GUILDS_RPC.channelPermissions, {
      channelId: hiddenText.id,
      userId: plain,
    });
    expect(rpc.permissions).toBe(0);
  });

  it('is visible to the server owner and to members with MANAGE_CHANNELS', async () => {
    expect(await channelIdsSeenBy(owner)).toContain(hiddenText.id);
    expect(await channelIdsSeenBy(manager)).toContain(hiddenText.id);
    expect((await g.call(manager, 'GET', `/v1/channels/${hiddenText.id}`)).status).toBe(200);
  });

  it('is visible to a member or a role given VIEW_CHANNEL by an explicit override, until the override goes', async () => {
    const override = await g.call(owner, 'PUT', `/v1/channels/${hiddenText.id}/permissions`, {
      userId: invited,
      allowBits: toMask(Permission.VIEW_CHANNEL),
      denyBits: 0,
    });
    expect(override.status).toBe(200);
    expect(await channelIdsSeenBy(invited)).toContain(hiddenText.id);
    expect((await g.call(invited, 'POST', `/v1/channels/${hiddenText.id}/messages`, { content: 'in' })).status).toBe(201);

    const role = await grantRole(roleHolder, 0n);
    expect(await channelIdsSeenBy(roleHolder)).not.toContain(hiddenText.id);
    await g.call(owner, 'PUT', `/v1/channels/${hiddenText.id}/permissions`, {
      roleId: role.id,
      allowBits: toMask(Permission.VIEW_CHANNEL),
      denyBits: 0,
    });
    expect(await channelIdsSeenBy(roleHolder)).toContain(hiddenText.id);

    expect((await g.call(owner, 'DELETE', `/v1/channels/${hiddenText.id}/permissions/${override.body.id}`)).status).toBe(204);
    expect((await g.call(invited, 'GET', `/v1/channels/${hiddenText.id}`)).status).toBe(404);
  });

  it('is visible to a member while they are connected to it, and their voice state only to those who see it', async () => {
    await g.call(owner, 'POST', '/v1/voice/join', { channelId: hiddenVoice.id });
    expect(await voiceUsersSeenBy(plain)).not.toContain(owner);
    expect(await voiceUsersSeenBy(manager)).toContain(owner);

    expect((await g.call(plain, 'POST', '/v1/voice/join', { channelId: (await voiceChannel()).id })).status).toBe(200);
    expect((await g.call(mover, 'POST', '/v1/voice/move', { userId: plain, channelId: hiddenVoice.id })).status).toBe(404);
    expect((await g.call(owner, 'POST', '/v1/voice/move', { userId: plain, channelId: hiddenVoice.id })).status).toBe(200);
    expect(await channelIdsSeenBy(plain)).toContain(hiddenVoice.id);
    expect(await voiceUsersSeenBy(plain)).toEqual(expect.arrayContaining([owner, plain]));

    expect((await g.call(plain, 'POST', '/v1/voice/leave')).status).toBe(204);
    expect(await channelIdsSeenBy(plain)).not.toContain(hiddenVoice.id);
    await g.call(owner, 'POST', '/v1/voice/leave');
  });

  it('may be hidden by the owner of a temporary channel, who keeps seeing it', async () => {
    const jtc = (await g.call(owner, 'POST', `/v1/servers/${server.id}/channels`, { name: 'create', channelType: 'voice' })).body;
    expect((await g.call(owner, 'PATCH', `/v1/servers/${server.id}`, { jtcChannelId: jtc.id })).status).toBe(200);
    const temp = (await g.call(tempOwner, 'POST', '/v1/voice/join', { channelId: jtc.id })).body.channel;
    expect((await hide(plain, temp.id)).status).toBe(403);
    expect((await hide(tempOwner, temp.id)).status).toBe(200);
    expect(await channelIdsSeenBy(plain)).not.toContain(temp.id);
    expect(await channelIdsSeenBy(tempOwner)).toContain(temp.id);
    expect((await g.call(plain, 'POST', '/v1/voice/join', { channelId: temp.id })).status).toBe(404);
    await g.call(tempOwner, 'POST', '/v1/voice/leave');
  });

  it('shows again to everyone once it is no longer hidden', async () => {
    expect((await hide(manager, hiddenText.id, false)).status).toBe(200);
    expect(await channelIdsSeenBy(plain)).toContain(hiddenText.id);
    expect((await hide(manager, hiddenText.id, true)).status).toBe(200);
    expect(await channelIdsSeenBy(plain)).not.toContain(hiddenText.id);
  });
});

async function voiceChannel(): Promise<{ id: string }> {
  const channels = (await g.call(owner, 'GET', `/v1/servers/${server.id}/channels`)).body as Row[];
  return channels.find((c) => c.channelType === 'voice' && !c.isHidden && !c.isTemporary) as { id: string };
}
