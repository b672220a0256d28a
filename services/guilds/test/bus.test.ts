import {
  ChannelGetRpc,
  ChannelPermissionsRpc,
  ChannelViewersRpc,
  MemberCheckRpc,
  type Membership,
  MembersPageRpc,
  Permission,
  PresenceSeenRpc,
  RolesPageRpc,
  type RpcContract,
  type SeenStatus,
  ServerMembersRpc,
  ServersPageRpc,
  SharedServersRpc,
  STREAMS,
  toMask,
  UserComembersRpc,
  UserServersRpc,
  VoiceAccessRpc,
} from '@chat/contracts';
import { type AppError, ensureStream, requestRpc, serveRpc, walkPages } from '@chat/kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId, startGuilds, until } from './harness.ts';

const g = await startGuilds();
afterAll(() => g.close());

const [owner, member, hidden, stranger] = [newId(), newId(), newId(), newId()];
let server: { id: string };
let text: { id: string };
let voice: { id: string };

beforeAll(async () => {
  server = (await g.call(owner, 'POST', '/v1/servers', { name: 'Rpc', isPublic: true })).body;
  for (const u of [member, hidden]) await g.call(u, 'POST', `/v1/servers/${server.id}/join`);
  const channels = (await g.call(owner, 'GET', `/v1/servers/${server.id}/channels`)).body;
  text = channels.find((c: { channelType: string }) => c.channelType === 'text');
  voice = channels.find((c: { channelType: string }) => c.channelType === 'voice');
  await g.call(owner, 'PUT', `/v1/channels/${voice.id}/permissions`, {
    userId: hidden,
    allowBits: 0,
    denyBits: toMask(Permission.VIEW_CHANNEL),
  });
});

// Loosely typed on purpose: the tests also send requests that break the contract.
const ask = (contract: RpcContract, data: unknown) =>
  requestRpc(g.runtime.bus, contract, data as never) as Promise<Record<string, unknown>>;
const askAs = <T>(contract: RpcContract, data: unknown) => ask(contract, data) as Promise<T>;
const statusOf = (p: Promise<unknown>) =>
  p.then(
    () => 200,
    (e: AppError) => e.status,
  );

describe('rpc.guilds.member.check', () => {
  it('answers membership and ownership, 404 for an unknown server, 400 for a malformed request', async () => {
    expect(await ask(MemberCheckRpc, { serverId: server.id, userId: owner })).toEqual({ isMember: true, isOwner: true });
    expect(await ask(MemberCheckRpc, { serverId: server.id, userId: member })).toEqual({ isMember: true, isOwner: false });
    expect(await ask(MemberCheckRpc, { serverId: server.id, userId: stranger })).toEqual({ isMember: false, isOwner: false });
    expect(await statusOf(ask(MemberCheckRpc, { serverId: newId(), userId: owner }))).toBe(404);
    expect(await statusOf(ask(MemberCheckRpc, { serverId: 'x' }))).toBe(400);
  });
});

describe('rpc.guilds.members.shared', () => {
  it('answers which of the users share a server with the asker, never the asker', async () => {
    expect(await ask(SharedServersRpc, { userId: member, otherUserIds: [owner, hidden, stranger, member] })).toEqual({
      sharing: expect.arrayContaining([owner, hidden]),
    });
    expect(
      ((await ask(SharedServersRpc, { userId: member, otherUserIds: [owner, hidden, stranger, member] })) as { sharing: string[] }).sharing,
    ).toHaveLength(2);
    expect(await ask(SharedServersRpc, { userId: stranger, otherUserIds: [owner] })).toEqual({ sharing: [] });
    expect(await statusOf(ask(SharedServersRpc, { userId: stranger, otherUserIds: [] }))).toBe(400);
  });
});

describe('rpc.guilds.servers.page and rpc.guilds.members.page', () => {
  /** Every row of a paged RPC, walked `limit` at a time. */
  const walk = async <Row, Key>(
    read: (after: Key | undefined, limit: number) => Promise<Row[]>,
    keyOf: (row: Row) => Key,
    limit: number,
  ) => {
    const rows: Row[] = [];
    await walkPages({ limit, read, keyOf, take: async (page) => void rows.push(...page) });
    return rows;
  };
  const key = (m: Membership) => `${m.serverId}/${m.userId}`;

  it('walk every server with its owner and every membership once, in key order, across page boundaries', async () => {
    const other = (await g.call(member, 'POST', '/v1/servers', { name: 'Rpc other' })).body as { id: string };
    const servers = await walk(
      async (after: string | undefined, limit: number) =>
        (await askAs<{ servers: { id: string; ownerId: string }[] }>(ServersPageRpc, { after, limit })).servers,
      (s) => s.id,
      1,
    );
    expect(servers.map((s) => s.id)).toEqual(servers.map((s) => s.id).sort());
    expect(servers).toEqual(
      expect.arrayContaining([
        { id: server.id, ownerId: owner },
        { id: other.id, ownerId: member },
      ]),
    );
    const members = await walk(
      async (after: Membership | undefined, limit: number) =>
        (await askAs<{ members: Membership[] }>(MembersPageRpc, { after, limit })).members,
      (m) => m,
      2,
    );
    const keys = members.map(key);
    expect(keys).toEqual([...keys].sort());
    expect(new Set(keys).size).toBe(keys.length);
    const ours = members.filter((m) => m.serverId === server.id || m.serverId === other.id).map(key);
    expect(ours.sort()).toEqual([...[owner, member, hidden].map((u) => `${server.id}/${u}`), `${other.id}/${member}`].sort());
  });

  it('rpc.guilds.roles.page walks every role with its name once, in id order', async () => {
    const named = (await g.call(owner, 'POST', `/v1/servers/${server.id}/roles`, { name: 'paged role' })).body as { id: string };
    const roles = await walk(
      async (after: string | undefined, limit: number) =>
        (await askAs<{ roles: { id: string; name: string }[] }>(RolesPageRpc, { after, limit })).roles,
      (r) => r.id,
      2,
    );
    expect(roles.map((r) => r.id)).toEqual(roles.map((r) => r.id).sort());
    expect(new Set(roles.map((r) => r.id)).size).toBe(roles.length);
    expect(roles).toEqual(expect.arrayContaining([{ id: named.id, name: 'paged role' }]));
    expect(await statusOf(ask(RolesPageRpc, { limit: 1001 }))).toBe(400);
  });

  it('answer 400 for a limit outside 1..1000 or a malformed cursor', async () => {
    expect(await statusOf(ask(ServersPageRpc, { limit: 0 }))).toBe(400);
    expect(await statusOf(ask(ServersPageRpc, { after: 'x', limit: 10 }))).toBe(400);
    expect(await statusOf(ask(MembersPageRpc, { limit: 1001 }))).toBe(400);
    expect(await statusOf(ask(MembersPageRpc, { after: { serverId: server.id }, limit: 10 }))).toBe(400);
  });
});

describe('rpc.guilds.channel.permissions and rpc.guilds.channel.get', () => {
  it('answers the channel-level mask from the same algorithm as HTTP', async () => {
    const http = (await g.call(member, 'GET', `/v1/channels/${text.id}/permissions/@me`)).body.permissions;
    const rpc = await ask(ChannelPermissionsRpc, { channelId: text.id, userId: member });
    expect(rpc).toEqual({ channelId: text.id, serverId: server.id, isMember: true, permissions: http });
    const none = await ask(ChannelPermissionsRpc, { channelId: voice.id, userId: hidden });
    expect(none).toMatchObject({ isMember: true, permissions: 0 });
    expect(await ask(ChannelPermissionsRpc, { channelId: text.id, userId: stranger })).toMatchObject({
      isMember: false,
      permissions: 0,
    });
    expect(await statusOf(ask(ChannelPermissionsRpc, { channelId: newId(), userId: owner }))).toBe(404);
  });

  it('answers the Channel record, 404 for an unknown one', async () => {
    expect(await ask(ChannelGetRpc, { channelId: text.id })).toEqual((await g.call(owner, 'GET', `/v1/channels/${text.id}`)).body);
    expect(await statusOf(ask(ChannelGetRpc, { channelId: newId() }))).toBe(404);
  });
});

describe('rpc.guilds.voice.access', () => {
  it('answers membership and MANAGE_CHANNELS, and 404 to whoever cannot see the channel', async () => {
    expect(await ask(VoiceAccessRpc, { channelId: voice.id, userId: owner })).toEqual({
      channel: { id: voice.id, serverId: server.id, channelType: 'voice', ownerId: null, musicLocked: false },
      isMember: true,
      inChannel: false,
      canManageChannel: true,
      isDj: false,
    });
    expect(await ask(VoiceAccessRpc, { channelId: voice.id, userId: member })).toMatchObject({ isMember: true, canManageChannel: false });
    expect(await statusOf(ask(VoiceAccessRpc, { channelId: voice.id, userId: hidden }))).toBe(404);
    expect(await statusOf(ask(VoiceAccessRpc, { channelId: voice.id, userId: stranger }))).toBe(404);
  });
});

describe('DJ roles', () => {
  it('are set by MANAGE_SERVER, must be roles of the server, and make their members DJs in voice access', async () => {
    const dj = (await g.call(owner, 'POST', `/v1/servers/${server.id}/roles`, { name: 'DJ' })).body;
    const other = (await g.call(owner, 'POST', '/v1/servers', { name: 'Other server' })).body;
    const foreign = (await g.call(owner, 'POST', `/v1/servers/${other.id}/roles`, { name: 'DJ elsewhere' })).body;
    const set = await g.call(owner, 'PATCH', `/v1/servers/${server.id}`, { djRoleIds: [dj.id, dj.id] });
    expect(set.status).toBe(200);
    expect(set.body.djRoleIds).toEqual([dj.id]);
    for (const djRoleIds of [[foreign.id], [newId()], Array.from({ length: 11 }, newId)]) {
      const bad = await g.call(owner, 'PATCH', `/v1/servers/${server.id}`, { djRoleIds });
      expect(bad.status).toBe(400);
      expect(bad.body.error).toMatch(/djRoleIds/);
    }
    expect((await g.call(member, 'PATCH', `/v1/servers/${server.id}`, { djRoleIds: [] })).status).toBe(403);
    expect((await g.call(owner, 'GET', `/v1/servers/${server.id}`)).body.djRoleIds).toEqual([dj.id]);

    expect(await ask(VoiceAccessRpc, { channelId: voice.id, userId: member })).toMatchObject({ isDj: false });
    expect((await g.call(owner, 'PUT', `/v1/servers/${server.id}/members/${member}/roles/${dj.id}`)).status).toBeLessThan(300);
    expect(await ask(VoiceAccessRpc, { channelId: voice.id, userId: member })).toMatchObject({ isDj: true });

    expect((await g.call(owner, 'DELETE', `/v1/servers/${server.id}/roles/${dj.id}`)).status).toBe(204);
    expect((await g.call(owner, 'GET', `/v1/servers/${server.id}`)).body.djRoleIds).toEqual([]);
  });
});

describe('read-model of users', () => {
  it('applies registered and updated events once, and ignores an older event arriving late', async () => {
    const id = newId();
    const t0 = new Date(Date.now() - 10_000).toISOString();
    const t1 = new Date().toISOString();
    await g.publishUser({ id, username: 'first', displayName: 'First', avatarUrl: null, badges: [] }, 'auth.user.registered', t0);
    await g.publishUser(
      { id, username: 'renamed', displayName: 'Renamed', avatarUrl: 'http://x/a.png', badges: [] },
      'auth.user.updated',
      t1,
    );
    await g.publishUser({ id, username: 'stale', displayName: 'Stale', avatarUrl: null, badges: [] }, 'auth.user.updated', t0);
    const row = async () => (await g.db.query('SELECT username, display_name, avatar_url FROM users WHERE id = $1', [id])).rows[0];
    await until(async () => (await g.db.query("SELECT count(*) n FROM processed_events WHERE consumer = 'guilds-users'")).rows[0].n >= 3);
    expect(await row()).toEqual({ username: 'renamed', display_name: 'Renamed', avatar_url: 'http://x/a.png' });
  });

  it("shows the badges of auth's latest event with each member", async () => {
    const id = newId();
    await g.publishUser({ id, username: 'badged', displayName: 'Badged', avatarUrl: null, badges: [] }, 'auth.user.registered');
    await g.publishUser(
      { id, username: 'badged', displayName: 'Badged', avatarUrl: null, badges: ['staff', 'server_owner'] },
      'auth.user.updated',
    );
    await until(async () => (await g.db.query('SELECT badges FROM users WHERE id = $1', [id])).rows[0]?.badges.length === 2);
    expect((await g.call(id, 'POST', `/v1/servers/${server.id}/join`)).status).toBe(200);
    const members = (await g.call(owner, 'GET', `/v1/servers/${server.id}/members?limit=100`)).body;
    expect(members.find((m: { userId: string }) => m.userId === id).user).toEqual({
      id,
      username: 'badged',
      displayName: 'Badged',
      avatarUrl: null,
      badges: ['staff', 'server_owner'],
    });
  });
});

describe('read-model of activities', () => {
  async function publishActivity(userId: string, activity: unknown, occurredAt = new Date().toISOString()) {
    await ensureStream(g.runtime.bus, STREAMS.social);
    const envelope = { id: newId(), subject: 'social.activity.updated', occurredAt, data: { userId, activity } };
    await g.runtime.bus.js.publish(g.runtime.bus.subject(envelope.subject), JSON.stringify(envelope), { msgID: envelope.id });
  }
  const memberOf = async (userId: string) =>
    (await g.call(owner, 'GET', `/v1/servers/${server.id}/members?limit=100`)).body.find((m: { userId: string }) => m.userId === userId);
  const applied = (n: number) => async () =>
    (await g.db.query("SELECT count(*)::int n FROM processed_events WHERE consumer = 'guilds-activities'")).rows[0].n >= n;

  // A stand-in for the gateway, which knows who is connected: `seen` is what it answers.
  const seen = new Map<string, SeenStatus>();
  beforeAll(() => {
    serveRpc(g.runtime.bus, g.runtime.log, PresenceSeenRpc, async ({ userIds }) => ({
      statuses: Object.fromEntries(userIds.map((id) => [id, seen.get(id) ?? ('offline' as const)])),
    }));
  });

  it("shows what a member plays from social's events, clears it, and ignores an older event arriving late", async () => {
    const playing = { gameId: null, name: 'Chess', startedAt: '2030-01-01T10:00:00.000Z' };
    const t0 = new Date(Date.now() - 10_000).toISOString();
    seen.set(member, 'idle');
    await publishActivity(member, playing);
    await until(applied(1));
    expect(await memberOf(member)).toMatchObject({ status: 'idle', activity: playing });
    expect(await memberOf(owner)).toMatchObject({ status: 'offline' });
    expect(await memberOf(owner)).not.toHaveProperty('activity');
    // Seen offline (no session, or invisible): the game would give them away, so it is not shown.
    seen.delete(member);
    expect(await memberOf(member)).toMatchObject({ status: 'offline' });
    expect(await memberOf(member)).not.toHaveProperty('activity');
    seen.set(member, 'idle');

    await publishActivity(member, null);
    await publishActivity(member, { ...playing, name: 'Stale' }, t0);
    await until(applied(3));
    expect(await memberOf(member)).not.toHaveProperty('activity');
  });
});

describe('the audience RPCs of the real-time socket', () => {
  // A server of their own: other tests here add members to the shared one.
  const [own, mem, hid] = [newId(), newId(), newId()];
  let sid: string;
  let open: { id: string };
  let shut: { id: string };
  beforeAll(async () => {
    sid = (await g.call(own, 'POST', '/v1/servers', { name: 'Audience', isPublic: true })).body.id;
    for (const u of [mem, hid]) await g.call(u, 'POST', `/v1/servers/${sid}/join`);
    const channels = (await g.call(own, 'GET', `/v1/servers/${sid}/channels`)).body;
    open = channels.find((c: { channelType: string }) => c.channelType === 'text');
    shut = channels.find((c: { channelType: string }) => c.channelType === 'voice');
    await g.call(own, 'PUT', `/v1/channels/${shut.id}/permissions`, {
      userId: hid,
      allowBits: 0,
      denyBits: toMask(Permission.VIEW_CHANNEL),
    });
  });

  it('rpc.guilds.channel.viewers answers who may view the channel now, overrides included', async () => {
    const all = await askAs<{ userIds: string[] }>(ChannelViewersRpc, { channelId: open.id });
    expect(all).toMatchObject({ channelId: open.id, serverId: sid });
    expect(all.userIds.sort()).toEqual([own, mem, hid].sort());
    const some = await askAs<{ userIds: string[] }>(ChannelViewersRpc, { channelId: shut.id });
    expect(some.userIds.sort()).toEqual([own, mem].sort());
    expect(await statusOf(ask(ChannelViewersRpc, { channelId: newId() }))).toBe(404);
  });

  it('rpc.guilds.channel.viewers leaves out whoever a hidden channel is hidden from, as REST does', async () => {
    const hidden = (await g.call(own, 'POST', `/v1/servers/${sid}/channels`, { name: 'hidden-room', channelType: 'text' })).body;
    expect((await g.call(own, 'PATCH', `/v1/channels/${hidden.id}`, { isHidden: true })).status).toBe(200);
    const viewers = await askAs<{ userIds: string[] }>(ChannelViewersRpc, { channelId: hidden.id });
    expect(viewers.userIds).toEqual([own]);
    expect((await g.call(mem, 'GET', `/v1/channels/${hidden.id}`)).status).toBe(404);
    await g.call(own, 'PUT', `/v1/channels/${hidden.id}/permissions`, {
      userId: mem,
      allowBits: toMask(Permission.VIEW_CHANNEL),
      denyBits: 0,
    });
    const after = await askAs<{ userIds: string[] }>(ChannelViewersRpc, { channelId: hidden.id });
    expect(after.userIds.sort()).toEqual([own, mem].sort());
  });

  it('rpc.guilds.server.members answers the members, filtered by a server-level permission', async () => {
    const everyone = await askAs<{ userIds: string[] }>(ServerMembersRpc, { serverId: sid });
    expect(everyone.userIds.sort()).toEqual([own, mem, hid].sort());
    const banners = await askAs<{ userIds: string[] }>(ServerMembersRpc, {
      serverId: sid,
      permission: toMask(Permission.BAN_MEMBERS),
    });
    expect(banners.userIds).toEqual([own]);
    expect(await statusOf(ask(ServerMembersRpc, { serverId: newId() }))).toBe(404);
  });

  it('rpc.guilds.user.servers and rpc.guilds.user.comembers answer a user’s servers and who shares one', async () => {
    expect(await ask(UserServersRpc, { userId: mem })).toEqual({ serverIds: [sid] });
    expect(await ask(UserServersRpc, { userId: newId() })).toEqual({ serverIds: [] });
    const comembers = await askAs<{ userIds: string[] }>(UserComembersRpc, { userId: mem });
    expect(comembers.userIds.sort()).toEqual([own, hid].sort());
  });
});
