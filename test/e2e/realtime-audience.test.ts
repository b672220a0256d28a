import type { Frame, GatewayClient } from '@chat/testkit';
import { describe, expect, it, vi } from 'vitest';
import { api, fileSockets, newUser, postMessage, publicServer, type TestUser } from './helpers.ts';

/**
 * Who the socket delivers what to, on the shared e2e platform: members whose access to a channel or
 * a server changes, voice channels one cannot view, groups with blocks, strangers, invisible users,
 * notifications, join requests, and RESUME of a session that is not one's own.
 *
 * A test that asserts something did not arrive first waits for a later dispatch on the same socket
 * that must arrive, so the absence is not an artefact of timing.
 */
const VIEW_CHANNEL = 1 << 10;
const EVERYONE_DEFAULT = 2251804225;
const WAIT = 15_000;
const THUMBS = encodeURIComponent('👍');

const { connect, identified } = fileSockets();

/** A call naming another user, retried while social's read-model does not know them yet (404). */
function once404sPass(method: string, path: string, user: TestUser, body: unknown) {
  return vi.waitFor(
    async () => {
      const res = await api(method, path, { user, body });
      if (res.status === 404) throw new Error(`still 404: ${JSON.stringify(res.body)}`);
      return res;
    },
    { timeout: WAIT, interval: 100 },
  );
}

async function befriend(a: TestUser, b: TestUser) {
  expect((await once404sPass('POST', '/v1/friends/requests', a, { userId: b.id })).status).toBe(201);
  expect((await api('POST', '/v1/friends/accept', { user: b, body: { userId: a.id } })).status).toBe(200);
}

async function conversation(user: TestUser, ...others: TestUser[]): Promise<string> {
  const res = await once404sPass('POST', '/v1/dm/conversations', user, { userIds: others.map((o) => o.id) });
  expect([200, 201]).toContain(res.status);
  return res.body.id;
}

async function dm(user: TestUser, conversationId: string, content: string): Promise<string> {
  const res = await api('POST', '/v1/dm/messages', { user, body: { conversationId, content } });
  expect(res.status).toBe(201);
  return res.body.id;
}

async function newChannel(owner: TestUser, serverId: string, name: string, channelType = 'text'): Promise<string> {
  const res = await api('POST', `/v1/servers/${serverId}/channels`, { user: owner, body: { name, channelType } });
  expect(res.status).toBe(201);
  return res.body.id;
}

const setOverride = async (owner: TestUser, channelId: string, body: Record<string, unknown>) =>
  expect((await api('PUT', `/v1/channels/${channelId}/permissions`, { user: owner, body })).status).toBe(200);

/** Every kind of event a channel sends: create, edit, reaction, pin, typing, delete. */
async function everythingIn(owner: TestUser, channelId: string, tag: string) {
  const id = await postMessage(owner, channelId, `${tag} create`);
  const path = `/v1/channels/${channelId}/messages/${id}`;
  expect((await api('PATCH', path, { user: owner, body: { content: `${tag} edit` } })).status).toBe(200);
  expect((await api('PUT', `${path}/reactions/${THUMBS}/@me`, { user: owner })).status).toBe(204);
  expect((await api('PUT', `/v1/channels/${channelId}/pins/${id}`, { user: owner })).status).toBe(204);
  expect((await api('POST', `/v1/channels/${channelId}/typing`, { user: owner })).status).toBe(204);
  expect((await api('DELETE', path, { user: owner })).status).toBe(204);
}

/** The dispatches received from frame `from` on that name `id` as their channel or as themselves. */
const naming = (c: GatewayClient, id: string, from = 0) =>
  c.frames.slice(from).filter((f) => f.op === 0 && (f.d?.channelId === id || f.d?.id === id));

const describeFrames = (frames: Frame[]) => frames.map((f) => `${f.t} ${JSON.stringify(f.d).slice(0, 120)}`);

/** The dispatches naming the channel from frame `from` on, as `{t, d}`. */
const aboutChannel = (c: GatewayClient, id: string, from: number) => naming(c, id, from).map((f) => ({ t: f.t, d: f.d }));

describe('a member whose view of a channel changes', () => {
  it('is told the channel went, then gets nothing more of it, once the role that alone granted VIEW_CHANNEL is taken away', async () => {
    const [owner, member] = [await newUser('own'), await newUser('mem')];
    const { serverId, textId: general } = await publicServer(owner, [member]);
    const secret = await newChannel(owner, serverId, 'secret');
    const role = (await api('POST', `/v1/servers/${serverId}/roles`, { user: owner, body: { name: 'seer' } })).body;
    await setOverride(owner, secret, { roleId: serverId, allowBits: 0, denyBits: VIEW_CHANNEL });
    await setOverride(owner, secret, { roleId: role.id, allowBits: VIEW_CHANNEL, denyBits: 0 });
    expect((await api('PUT', `/v1/servers/${serverId}/members/${member.id}/roles/${role.id}`, { user: owner })).status).toBe(204);
    const c = await identified(member);
    await postMessage(owner, secret, 'seen before');
    await c.dispatch('MESSAGE_CREATE', (d) => d.content === 'seen before', WAIT);
    const mark = c.frames.length;

    expect((await api('DELETE', `/v1/servers/${serverId}/members/${member.id}/roles/${role.id}`, { user: owner })).status).toBe(204);
    await everythingIn(owner, secret, 'after the role went');
    await postMessage(owner, general, 'marker');
    await c.dispatch('MESSAGE_CREATE', (d) => d.content === 'marker', WAIT);
    expect(aboutChannel(c, secret, mark)).toEqual([{ t: 'CHANNEL_DELETE', d: { id: secret, serverId } }]);
  });

  it('sees a channel go while @everyone lacks VIEW_CHANNEL, gets nothing of it, and sees it and its messages again once the bit is back', async () => {
    const [owner, member] = [await newUser('own'), await newUser('mem')];
    const { serverId, textId } = await publicServer(owner, [member]);
    const c = await identified(member);
    const ownerSocket = await identified(owner);
    const everyone = (permissions: number) =>
      api('PATCH', `/v1/servers/${serverId}/roles/${serverId}`, { user: owner, body: { permissions } });
    expect((await everyone(EVERYONE_DEFAULT - VIEW_CHANNEL)).status).toBe(200);
    await c.dispatch('ROLE_UPDATE', (d) => d.id === serverId, WAIT);
    // Right after the ROLE_UPDATE: the channel's CHANNEL_DELETE may have come with it, before this runs.
    const mark = c.frames.findIndex((f) => f.t === 'ROLE_UPDATE' && f.d.id === serverId) + 1;
    await everythingIn(owner, textId, 'hidden');
    // Once the owner has the marker, the hidden period's events have been delivered: none can reach
    // the member after the bit comes back and pass for a leak that is not one.
    await postMessage(owner, textId, 'owner marker');
    await ownerSocket.dispatch('MESSAGE_CREATE', (d) => d.content === 'owner marker', WAIT);
    expect((await everyone(EVERYONE_DEFAULT)).status).toBe(200);
    await postMessage(owner, textId, 'visible again');
    await c.dispatch('MESSAGE_CREATE', (d) => d.content === 'visible again', WAIT);
    expect(c.dispatches('MESSAGE_CREATE').map((f) => f.d.content)).toEqual(['visible again']);
    const channel = (await api('GET', `/v1/channels/${textId}`, { user: member })).body;
    expect(aboutChannel(c, textId, mark).filter((f) => f.t !== 'MESSAGE_CREATE')).toEqual([
      { t: 'CHANNEL_DELETE', d: { id: textId, serverId } },
      { t: 'CHANNEL_CREATE', d: channel },
    ]);
  });

  it('is given a channel (CHANNEL_CREATE) at once when a member override grants VIEW_CHANNEL, and nothing posted before', async () => {
    const [owner, member] = [await newUser('own'), await newUser('mem')];
    const { serverId } = await publicServer(owner, [member]);
    const secret = await newChannel(owner, serverId, 'secret');
    await setOverride(owner, secret, { roleId: serverId, allowBits: 0, denyBits: VIEW_CHANNEL });
    const c = await identified(member);
    await postMessage(owner, secret, 'before the grant');
    await setOverride(owner, secret, { userId: member.id, allowBits: VIEW_CHANNEL, denyBits: 0 });
    await postMessage(owner, secret, 'after the grant');
    await c.dispatch('MESSAGE_CREATE', (d) => d.content === 'after the grant', WAIT);
    expect(c.dispatches('MESSAGE_CREATE').map((f) => f.d.content)).toEqual(['after the grant']);
    expect(c.dispatches('CHANNEL_OVERRIDE_UPDATE').map((f) => f.d.channelId)).toContain(secret);
    const channel = (await api('GET', `/v1/channels/${secret}`, { user: member })).body;
    expect(c.dispatches('CHANNEL_CREATE').map((f) => f.d)).toEqual([channel]);
  });

  it('is told the channel went, then gets nothing more of it, once it is made hidden', async () => {
    const [owner, member] = [await newUser('own'), await newUser('mem')];
    const { serverId, textId: general } = await publicServer(owner, [member]);
    const channelId = await newChannel(owner, serverId, 'to-hide');
    const c = await identified(member);
    await postMessage(owner, channelId, 'visible');
    await c.dispatch('MESSAGE_CREATE', (d) => d.content === 'visible', WAIT);
    const mark = c.frames.length;
    expect((await api('PATCH', `/v1/channels/${channelId}`, { user: owner, body: { isHidden: true } })).status).toBe(200);
    await everythingIn(owner, channelId, 'hidden now');
    await postMessage(owner, general, 'marker');
    await c.dispatch('MESSAGE_CREATE', (d) => d.content === 'marker', WAIT);
    expect(aboutChannel(c, channelId, mark)).toEqual([{ t: 'CHANNEL_DELETE', d: { id: channelId, serverId } }]);
  });

  it('is not told of the deletion of a channel it could not see, and learns no id from it', async () => {
    const [owner, member, seer] = [await newUser('own'), await newUser('mem'), await newUser('seer')];
    const { serverId, textId: general } = await publicServer(owner, [member, seer]);
    const secret = await newChannel(owner, serverId, 'secret');
    await setOverride(owner, secret, { roleId: serverId, allowBits: 0, denyBits: VIEW_CHANNEL });
    await setOverride(owner, secret, { userId: seer.id, allowBits: VIEW_CHANNEL, denyBits: 0 });
    const [c, seerSocket] = [await identified(member), await identified(seer)];
    expect((await api('DELETE', `/v1/channels/${secret}`, { user: owner })).status).toBe(204);
    const told = await seerSocket.dispatch('CHANNEL_DELETE', (d) => d.id === secret, WAIT);
    expect(told.d).toEqual({ id: secret, serverId });
    await postMessage(owner, general, 'marker');
    await c.dispatch('MESSAGE_CREATE', (d) => d.content === 'marker', WAIT);
    expect(c.frames.filter((f) => JSON.stringify(f.d ?? null).includes(secret))).toEqual([]);
  });
});

describe('a member who is no longer in a server', () => {
  for (const how of ['banned', 'leaving'] as const) {
    it(`is told once when ${how}, then gets nothing of the server: messages, channels, roles, presence, voice`, async () => {
      const [owner, member, other, elsewhere] = [await newUser('own'), await newUser('mem'), await newUser('oth'), await newUser('else')];
      const { serverId, textId, voiceId } = await publicServer(owner, [member, other]);
      const markerServer = await publicServer(elsewhere, [member]);
      const c = await identified(member);
      const o = await identified(other);
      await c.dispatch('PRESENCE_UPDATE', (d) => d.userId === other.id, WAIT);
      if (how === 'banned')
        expect((await api('PUT', `/v1/servers/${serverId}/bans/${member.id}`, { user: owner, body: {} })).status).toBe(200);
      else expect((await api('DELETE', `/v1/servers/${serverId}/members/@me`, { user: member })).status).toBe(204);
      await c.dispatch('SERVER_MEMBER_REMOVE', (d) => d.serverId === serverId, WAIT);
      const removedAt = c.frames.findIndex((f) => f.t === 'SERVER_MEMBER_REMOVE');

      await everythingIn(owner, textId, `after ${how}`);
      await newChannel(owner, serverId, 'new-after');
      expect((await api('POST', `/v1/servers/${serverId}/roles`, { user: owner, body: { name: 'later' } })).status).toBe(201);
      expect((await api('PATCH', `/v1/servers/${serverId}`, { user: owner, body: { name: 'renamed' } })).status).toBe(200);
      expect((await api('POST', '/v1/voice/join', { user: other, body: { channelId: voiceId } })).status).toBe(200);
      // The other member, no longer a co-member, goes offline: the ex-member must not hear of it.
      o.close();
      await o.closed;
      await vi.waitFor(
        async () => {
          const members = (await api('GET', `/v1/servers/${serverId}/members`, { user: owner })).body as {
            userId: string;
            status: string;
          }[];
          expect(members.find((m) => m.userId === other.id)?.status).toBe('offline');
        },
        { timeout: WAIT, interval: 200 },
      );
      await postMessage(elsewhere, markerServer.textId, 'marker');
      await c.dispatch('MESSAGE_CREATE', (d) => d.content === 'marker', WAIT);
      const fromServer = c.frames
        .slice(removedAt + 1)
        .filter((f) => f.op === 0 && (f.d?.serverId === serverId || f.d?.id === serverId || f.d?.userId === other.id));
      expect(describeFrames(fromServer)).toEqual([]);
      expect(c.dispatches('SERVER_MEMBER_REMOVE').filter((f) => f.d.serverId === serverId)).toHaveLength(1);
    });
  }

  it('gets SERVER_DELETE when the server is deleted, and no presence of its other members after', async () => {
    const [owner, member, other, elsewhere] = [await newUser('own'), await newUser('mem'), await newUser('oth'), await newUser('else')];
    const { serverId } = await publicServer(owner, [member, other]);
    await publicServer(elsewhere, [member]);
    const c = await identified(member);
    for (const user of [other, owner, elsewhere]) await identified(user);
    expect((await api('DELETE', `/v1/servers/${serverId}`, { user: owner })).status).toBe(204);
    const deleted = await c.dispatch('SERVER_DELETE', (d) => d.id === serverId, WAIT);
    expect(deleted.d).toEqual({ id: serverId });
    const deletedAt = c.frames.findIndex((f) => f.t === 'SERVER_DELETE');
    const presence = (user: TestUser, body: Record<string, unknown>) => api('PATCH', '/v1/users/@me/presence', { user, body });
    expect((await presence(other, { status: 'dnd', customStatus: 'secret plans' })).status).toBe(200);
    expect((await presence(owner, { status: 'idle' })).status).toBe(200);
    // Presence travels on auth's stream: a later change the member must see closes the window.
    expect((await presence(elsewhere, { status: 'dnd' })).status).toBe(200);
    await c.dispatch('PRESENCE_UPDATE', (d) => d.userId === elsewhere.id && d.status === 'dnd', WAIT);
    const after = c.frames.slice(deletedAt + 1).filter((f) => f.t === 'PRESENCE_UPDATE' && [owner.id, other.id].includes(f.d.userId));
    expect(after.map((f) => f.d)).toEqual([]);
  });
});

describe('voice states of a channel', () => {
  it('reach no member who cannot view the voice channel', async () => {
    const [owner, speaker, watcher] = [await newUser('own'), await newUser('spk'), await newUser('wat')];
    const { serverId, textId } = await publicServer(owner, [speaker, watcher]);
    const privateVoice = await newChannel(owner, serverId, 'private-voice', 'voice');
    await setOverride(owner, privateVoice, { userId: watcher.id, allowBits: 0, denyBits: VIEW_CHANNEL });
    const w = await identified(watcher);
    expect((await api('POST', '/v1/voice/join', { user: speaker, body: { channelId: privateVoice } })).status).toBe(200);
    expect((await api('PATCH', '/v1/voice/state', { user: speaker, body: { selfMute: true } })).status).toBe(200);
    expect((await api('POST', '/v1/voice/leave', { user: speaker })).status).toBe(204);
    await postMessage(owner, textId, 'marker');
    await w.dispatch('MESSAGE_CREATE', (d) => d.content === 'marker', WAIT);
    expect(describeFrames(naming(w, privateVoice).filter((f) => f.t?.startsWith('VOICE_STATE')))).toEqual([]);
  });

  it('reach a member moved into a hidden voice channel while connected there, and nothing of it after they leave', async () => {
    const [owner, member] = [await newUser('own'), await newUser('mem')];
    const { serverId, textId, voiceId: lobby } = await publicServer(owner, [member]);
    const hidden = await newChannel(owner, serverId, 'hidden-vc', 'voice');
    expect((await api('PATCH', `/v1/channels/${hidden}`, { user: owner, body: { isHidden: true } })).status).toBe(200);
    const m = await identified(member);
    expect((await api('POST', '/v1/voice/join', { user: owner, body: { channelId: hidden } })).status).toBe(200);
    expect((await api('POST', '/v1/voice/join', { user: member, body: { channelId: lobby } })).status).toBe(200);
    expect((await api('POST', '/v1/voice/move', { user: owner, body: { userId: member.id, channelId: hidden } })).status).toBe(200);
    await m.dispatch('VOICE_STATE_UPDATE', (d) => d.userId === member.id && d.channelId === hidden, WAIT);
    // Connected there, the member views the channel: the owner's state change reaches them.
    expect((await api('PATCH', '/v1/voice/state', { user: owner, body: { selfMute: true } })).status).toBe(200);
    await m.dispatch('VOICE_STATE_UPDATE', (d) => d.userId === owner.id && d.channelId === hidden && d.selfMute === true, WAIT);

    expect((await api('POST', '/v1/voice/leave', { user: member })).status).toBe(204);
    await m.dispatch('VOICE_STATE_DELETE', (d) => d.userId === member.id, WAIT);
    const mark = m.frames.length;
    expect((await api('PATCH', '/v1/voice/state', { user: owner, body: { selfMute: false } })).status).toBe(200);
    expect((await api('POST', '/v1/voice/leave', { user: owner })).status).toBe(204);
    await postMessage(owner, textId, 'marker');
    await m.dispatch('MESSAGE_CREATE', (d) => d.content === 'marker', WAIT);
    expect(describeFrames(m.frames.slice(mark).filter((f) => f.op === 0 && f.d?.channelId === hidden))).toEqual([]);
  });
});

describe('groups', () => {
  it('send the blocker no message, typing nor reaction of the person they blocked', async () => {
    const [blocked, blocker, third] = [await newUser('bld'), await newUser('blk'), await newUser('thr')];
    expect((await once404sPass('POST', '/v1/friends/block', blocker, { userId: blocked.id })).status).toBe(201);
    const group = await conversation(third, blocked, blocker);
    const s = await identified(blocker);
    const fromThird = await dm(third, group, 'hello from the third');
    await s.dispatch('DM_MESSAGE_CREATE', (d) => d.id === fromThird, WAIT);
    await dm(blocked, group, 'from the blocked one');
    expect((await api('POST', `/v1/dm/conversations/${group}/typing`, { user: blocked })).status).toBe(204);
    expect((await api('PUT', `/v1/dm/messages/${fromThird}/reactions/${THUMBS}/@me`, { user: blocked })).status).toBe(204);
    const marker = await dm(third, group, 'marker');
    await s.dispatch('DM_MESSAGE_CREATE', (d) => d.id === marker, WAIT);
    const fromBlocked = s.dispatches().filter((f) => f.d?.senderId === blocked.id || f.d?.userId === blocked.id);
    expect(describeFrames(fromBlocked)).toEqual([]);
  });

  it('send nothing more to someone who left: messages, edits, reactions, typing, deletes, calls', async () => {
    const [a, b, leaver] = [await newUser('ga'), await newUser('gb'), await newUser('gl')];
    const group = await conversation(a, b, leaver);
    const pair = await conversation(a, leaver);
    const s = await identified(leaver);
    const first = await dm(a, group, 'before leaving');
    await s.dispatch('DM_MESSAGE_CREATE', (d) => d.id === first, WAIT);
    const mark = s.frames.length;
    expect((await api('DELETE', `/v1/dm/conversations/${group}/members/@me`, { user: leaver })).status).toBe(204);
    const second = await dm(a, group, 'after leaving');
    expect((await api('PATCH', `/v1/dm/messages/${first}`, { user: a, body: { content: 'edited after leaving' } })).status).toBe(200);
    expect((await api('PUT', `/v1/dm/messages/${second}/reactions/${THUMBS}/@me`, { user: b })).status).toBe(204);
    expect((await api('POST', `/v1/dm/conversations/${group}/typing`, { user: a })).status).toBe(204);
    expect((await api('DELETE', `/v1/dm/messages/${first}`, { user: a })).status).toBe(204);
    expect((await api('POST', `/v1/dm/conversations/${group}/call`, { user: a })).status).toBe(201);
    const marker = await dm(a, pair, 'marker');
    await s.dispatch('DM_MESSAGE_CREATE', (d) => d.id === marker, WAIT);
    const about = s.frames.slice(mark).filter((f) => f.op === 0 && (f.d?.conversationId === group || f.d?.call?.conversationId === group));
    // Their own leave, once (the group is gone for their other sessions too), and nothing after it.
    expect(about.map((f) => [f.t, f.d?.userId])).toEqual([['DM_CONVERSATION_MEMBER_REMOVE', leaver.id]]);
  });
});

describe('presence and profile', () => {
  it('reach no stranger: no presence, profile change or typing of a user they share nothing with', async () => {
    const [user, friend, stranger, strangersFriend] = [
      await newUser('usr'),
      await newUser('fr'),
      await newUser('str'),
      await newUser('sf'),
    ];
    await befriend(user, friend);
    await befriend(stranger, strangersFriend);
    const pair = await conversation(user, friend);
    const s = await identified(stranger);
    await identified(user);
    await identified(strangersFriend);
    expect((await api('PATCH', '/v1/users/@me/presence', { user, body: { status: 'dnd', customStatus: 'private' } })).status).toBe(200);
    expect((await api('PATCH', '/v1/users/@me', { user, body: { displayName: 'Renamed' } })).status).toBe(200);
    expect((await api('POST', `/v1/dm/conversations/${pair}/typing`, { user })).status).toBe(204);
    // After these, on the same (auth) stream: the stranger's own friend changes presence.
    expect((await api('PATCH', '/v1/users/@me/presence', { user: strangersFriend, body: { status: 'idle' } })).status).toBe(200);
    await s.dispatch('PRESENCE_UPDATE', (d) => d.userId === strangersFriend.id && d.status === 'idle', WAIT);
    expect(describeFrames(s.dispatches().filter((f) => JSON.stringify(f.d).includes(user.id)))).toEqual([]);
  });

  it('show a profile’s live status to a friend and a co-member, not to a stranger (GET /v1/users/{id})', async () => {
    const [user, friend, comember, stranger] = [await newUser('prof'), await newUser('pfr'), await newUser('pco'), await newUser('pst')];
    await befriend(user, friend);
    await publicServer(comember, [user]);
    await identified(user);
    expect((await api('PATCH', '/v1/users/@me/presence', { user, body: { status: 'dnd', customStatus: 'at the dentist' } })).status).toBe(
      200,
    );
    const profileAs = async (viewer: TestUser) => {
      const res = await api('GET', `/v1/users/${user.id}`, { user: viewer });
      expect(res.status).toBe(200);
      return { status: res.body.status, customStatus: res.body.customStatus };
    };
    const shown = { status: 'dnd', customStatus: 'at the dentist' };
    await vi.waitFor(async () => expect(await profileAs(friend)).toEqual(shown), { timeout: WAIT });
    expect(await profileAs(comember)).toEqual(shown);
    expect(await profileAs(stranger)).toEqual({ status: 'offline', customStatus: '' });
  });

  it('reach no former friend and nobody the user blocked', async () => {
    const [user, former, blocked, marker] = [await newUser('usr'), await newUser('exf'), await newUser('bld'), await newUser('mrk')];
    for (const other of [former, blocked]) {
      await befriend(user, other);
      await befriend(marker, other);
    }
    expect((await api('DELETE', `/v1/friends/${former.id}`, { user })).status).toBe(204);
    expect((await api('POST', '/v1/friends/block', { user, body: { userId: blocked.id } })).status).toBe(201);
    const sockets = [await identified(former), await identified(blocked)];
    await identified(marker);
    await identified(user);
    expect((await api('PATCH', '/v1/users/@me/presence', { user, body: { status: 'dnd', customStatus: 'private' } })).status).toBe(200);
    // After it, on the same (auth) stream: their common friend changes presence.
    expect((await api('PATCH', '/v1/users/@me/presence', { user: marker, body: { status: 'idle' } })).status).toBe(200);
    for (const s of sockets) {
      await s.dispatch('PRESENCE_UPDATE', (d) => d.userId === marker.id && d.status === 'idle', WAIT);
      expect(describeFrames(s.dispatches('PRESENCE_UPDATE').filter((f) => f.d.userId === user.id))).toEqual([]);
    }
  });

  it('show an invisible user to no friend: not online, no custom status, no activity', async () => {
    const [user, friend] = [await newUser('inv'), await newUser('invf')];
    await befriend(user, friend);
    const f = await identified(friend);
    expect((await api('PATCH', '/v1/users/@me/presence', { user, body: { status: 'invisible', customStatus: 'hiding' } })).status).toBe(
      200,
    );
    await identified(user);
    expect(
      (await api('PATCH', '/v1/users/@me/presence', { user, body: { status: 'invisible', customStatus: 'still hiding' } })).status,
    ).toBe(200);
    expect((await api('PUT', '/v1/users/@me/activity', { user, body: { name: 'Chess' } })).status).toBe(200);
    // Then the user shows up: everything before it has had its chance to arrive.
    expect((await api('PATCH', '/v1/users/@me/presence', { user, body: { status: 'online' } })).status).toBe(200);
    await f.dispatch('PRESENCE_UPDATE', (d) => d.userId === user.id && d.status === 'online', WAIT);
    const before = f.dispatches('PRESENCE_UPDATE').filter((x) => x.d.userId === user.id && x.d.status !== 'online');
    expect(before.map((x) => x.d)).toEqual([]);
  });
});

describe('notifications and join requests', () => {
  it('send no NOTIFICATION_CREATE for a reply or a mention in a channel the member can no longer view', async () => {
    const [owner, member] = [await newUser('own'), await newUser('mem')];
    const { serverId, textId: general } = await publicServer(owner, [member]);
    const secret = await newChannel(owner, serverId, 'secret');
    const c = await identified(member);
    const mine = await postMessage(member, secret, 'my message');
    await setOverride(owner, secret, { userId: member.id, allowBits: 0, denyBits: VIEW_CHANNEL });
    await postMessage(owner, secret, `secret reply <@${member.id}>`, { replyToId: mine });
    await postMessage(owner, general, `public mention <@${member.id}>`);
    // Social turns guilds' events into notifications in order: the later one's arrival closes the window.
    await c.dispatch('NOTIFICATION_CREATE', (d) => d.channelId === general, WAIT);
    expect(
      c
        .dispatches('NOTIFICATION_CREATE')
        .filter((f) => f.d.channelId === secret)
        .map((f) => f.d),
    ).toEqual([]);
  });

  it('send a join request, with its message, to MANAGE_SERVER holders and the requester only', async () => {
    const [owner, member, requester] = [await newUser('own'), await newUser('mem'), await newUser('req')];
    const { serverId, textId } = await publicServer(owner, [], { requireApproval: true });
    const invite = (await api('POST', `/v1/servers/${serverId}/invites`, { user: owner, body: {} })).body;
    expect((await api('POST', `/v1/invites/${invite.code}/accept`, { user: member })).status).toBe(200);
    const m = await identified(member);
    const o = await identified(owner);
    const r = await identified(requester);
    const request = await api('POST', `/v1/servers/${serverId}/join-requests`, { user: requester, body: { message: 'let me in' } });
    expect(request.status).toBe(201);
    expect((await o.dispatch('JOIN_REQUEST_CREATE', (d) => d.id === request.body.id, WAIT)).d).toMatchObject({ message: 'let me in' });
    await r.dispatch('JOIN_REQUEST_CREATE', (d) => d.id === request.body.id, WAIT);
    await postMessage(owner, textId, 'marker');
    await m.dispatch('MESSAGE_CREATE', (d) => d.content === 'marker', WAIT);
    expect(
      m
        .dispatches()
        .filter((f) => f.t?.startsWith('JOIN_REQUEST'))
        .map((f) => f.t),
    ).toEqual([]);
  });
});

describe('RESUME', () => {
  /** Sends a RESUME of `sessionId` on a new socket of `user` and answers the first answer frame. */
  async function resume(user: TestUser, token: string, sessionId: string, seq: number) {
    const socket = await connect(user);
    socket.send({ op: 6, d: { token, sessionId, seq } });
    const answer = await socket.next((f) => f.op === 9 || f.op === 0, WAIT);
    return { socket, answer };
  }

  it('refuses with INVALID_SESSION a user resuming another user’s session, live or dropped, and replays nothing', async () => {
    const [victim, attacker, friend] = [await newUser('vic'), await newUser('att'), await newUser('vf')];
    await befriend(victim, friend);
    const pair = await conversation(friend, victim);
    const v = await identified(victim);
    const sessionId = v.dispatches('READY')[0]?.d.sessionId as string;
    const id = await dm(friend, pair, 'for the victim only');
    await v.dispatch('DM_MESSAGE_CREATE', (d) => d.id === id, WAIT);

    const live = await resume(attacker, attacker.token, sessionId, 0);
    expect(live.answer.op).toBe(9);
    expect(live.socket.dispatches()).toEqual([]);

    v.close();
    await v.closed;
    await dm(friend, pair, 'while dropped');
    const dropped = await resume(attacker, attacker.token, sessionId, 0);
    expect(dropped.answer.op).toBe(9);
    expect(dropped.socket.dispatches()).toEqual([]);
  });

  it('refuses with INVALID_SESSION a resume of a logged-out session with a new login’s token', async () => {
    const [user, friend] = [await newUser('lo'), await newUser('lof')];
    await befriend(user, friend);
    const pair = await conversation(friend, user);
    const u = await identified(user);
    const sessionId = u.dispatches('READY')[0]?.d.sessionId as string;
    expect((await api('POST', '/v1/auth/logout', { user, body: { refreshToken: user.refreshToken } })).status).toBe(204);
    await u.closeCode(WAIT);
    await dm(friend, pair, 'after logout');
    const login = await api('POST', '/v1/auth/login', { ip: user.ip, body: { login: user.email, password: user.password } });
    expect(login.status).toBe(200);
    const again = await resume(user, login.body.token, sessionId, 1);
    expect(again.answer.op).toBe(9);
    expect(again.socket.dispatches()).toEqual([]);
  });
});
