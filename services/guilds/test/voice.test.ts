import { readFileSync } from 'node:fs';
import { Permission, toMask, VoiceAccessRpc } from '@chat/contracts';
import { loadConfig, mediaGrantIssuer, requestRpc } from '@chat/kit';
import { TokenVerifier } from 'livekit-server-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GuildsConfig } from '../src/config.ts';
import { joinVoice, sweepVoiceStates } from '../src/domain/voice.ts';
import { startVoiceSweeper } from '../src/domain/voice-sweeper.ts';
import { newId, startGuilds, until } from './harness.ts';

const g = await startGuilds();
afterAll(() => g.close());

type Row = Record<string, unknown>;
let owner: string;
const [alice, bob, carol, dave, stranger] = [newId(), newId(), newId(), newId(), newId()];
let server: { id: string };
let privateServer: { id: string };
let text: { id: string };
let voice: { id: string; categoryId: string };

beforeAll(async () => {
  owner = await g.knownUser('owner');
  server = (await g.call(owner, 'POST', '/v1/servers', { name: 'Voice', isPublic: true })).body;
  privateServer = (await g.call(owner, 'POST', '/v1/servers', { name: 'Private' })).body;
  for (const u of [alice, bob, carol, dave]) expect((await g.call(u, 'POST', `/v1/servers/${server.id}/join`)).status).toBe(200);
  const channels = (await g.call(owner, 'GET', `/v1/servers/${server.id}/channels`)).body;
  text = channels.find((c: Row) => c.channelType === 'text');
  voice = channels.find((c: Row) => c.channelType === 'voice');
});

const join = (userId: string, channelId: string) => g.call(userId, 'POST', '/v1/voice/join', { channelId });
const leave = (userId: string) => g.call(userId, 'POST', '/v1/voice/leave');
const newVoiceChannel = async (name = 'room') =>
  (await g.call(owner, 'POST', `/v1/servers/${server.id}/channels`, { name, channelType: 'voice' })).body as { id: string };

/** The stored voice state of a user (undefined when they have none). */
const stateOf = async (userId: string): Promise<Row | undefined> =>
  (await g.db.query('SELECT channel_id, server_id, self_mute, self_deaf, expires_at FROM voice_states WHERE user_id = $1', [userId]))
    .rows[0];
const channelRow = async (id: string): Promise<Row | undefined> => (await g.db.query('SELECT * FROM channels WHERE id = $1', [id])).rows[0];
/** Events of a subject whose payload has these fields. */
const eventsWhere = async (subject: string, fields: Row) =>
  (await g.outbox(subject)).map((e) => e.data).filter((data) => Object.entries(fields).every(([k, v]) => data[k] === v));
const access = (userId: string, channelId: string) => requestRpc(g.runtime.bus, VoiceAccessRpc, { channelId, userId });
const expireNow = (userId: string) =>
  g.db.query("UPDATE voice_states SET expires_at = now() - interval '1 second' WHERE user_id = $1", [userId]);

async function setJtc(channelId: string | null) {
  expect((await g.call(owner, 'PATCH', `/v1/servers/${server.id}`, { jtcChannelId: channelId })).status).toBe(200);
}

describe('joining a voice channel', () => {
  it('connects the caller, answers state and channel, lists them, tells music, and emits joined', async () => {
    const room = await newVoiceChannel('join-basic');
    const res = await join(alice, room.id);
    expect(res.status).toBe(200);
    expect(res.body.channel).toMatchObject({ id: room.id, channelType: 'voice' });
    expect(res.body.state).toMatchObject({ userId: alice, serverId: server.id, channelId: room.id, selfMute: false, selfDeaf: false });
    expect(new Date(res.body.state.expiresAt).getTime()).toBeGreaterThan(Date.now() + 50_000);
    expect(await stateOf(alice)).toMatchObject({ channel_id: room.id, server_id: server.id });

    const list = await g.call(bob, 'GET', `/v1/servers/${server.id}/voice-states`);
    expect(list.status).toBe(200);
    expect(list.body).toContainEqual(res.body.state);
    expect(await access(alice, room.id)).toMatchObject({ isMember: true, inChannel: true });
    expect(await access(bob, room.id)).toMatchObject({ isMember: true, inChannel: false });
    expect(await eventsWhere('guilds.voice.joined', { userId: alice, channelId: room.id })).toHaveLength(1);
  });

  it('refuses a text channel (400), an unknown or invisible channel (404) and a malformed body (400), changing nothing', async () => {
    const before = await stateOf(carol);
    const privateVoice = (await g.call(owner, 'GET', `/v1/servers/${privateServer.id}/channels`)).body.find(
      (c: Row) => c.channelType === 'voice',
    );
    const cases: [string, unknown, number][] = [
      [carol, { channelId: text.id }, 400],
      [carol, { channelId: newId() }, 404],
      [carol, { channelId: privateVoice.id }, 404],
      [stranger, { channelId: voice.id }, 404],
      [carol, { channelId: 'nope' }, 400],
      [carol, {}, 400],
    ];
    for (const [user, body, status] of cases) {
      const res = await g.call(user, 'POST', '/v1/voice/join', body);
      expect(res.status, JSON.stringify(body)).toBe(status);
      expect(res.body).toEqual({ error: expect.any(String) });
    }
    expect((await g.call(null, 'POST', '/v1/voice/join', { channelId: voice.id })).status).toBe(401);
    expect(await stateOf(carol)).toEqual(before);
    expect(await stateOf(stranger)).toBeUndefined();
  });

  it('needs CONNECT in the channel (403)', async () => {
    const room = await newVoiceChannel('no-connect');
    await g.call(owner, 'PUT', `/v1/channels/${room.id}/permissions`, {
      roleId: server.id,
      allowBits: 0,
      denyBits: toMask(Permission.CONNECT),
    });
    const res = await join(dave, room.id);
    expect(res).toMatchObject({ status: 403, body: { error: 'Missing permission CONNECT' } });
    expect((await stateOf(dave))?.channel_id).not.toBe(room.id);
  });

  it('keeps one state per user: joining another channel leaves the previous one (left "switched")', async () => {
    const [a, b] = [await newVoiceChannel('switch-a'), await newVoiceChannel('switch-b')];
    expect((await join(bob, a.id)).status).toBe(200);
    expect((await g.call(bob, 'PATCH', '/v1/voice/state', { selfMute: true })).status).toBe(200);
    const res = await join(bob, b.id);
    expect(res.status).toBe(200);
    // selfMute is the client's setting: it follows the user from channel to channel.
    expect(res.body.state).toMatchObject({ channelId: b.id, selfMute: true });
    expect((await g.db.query('SELECT channel_id FROM voice_states WHERE user_id = $1', [bob])).rows).toEqual([{ channel_id: b.id }]);
    expect(await eventsWhere('guilds.voice.left', { userId: bob, channelId: a.id })).toEqual([
      { userId: bob, serverId: server.id, channelId: a.id, reason: 'switched', channelEmptied: true },
    ]);
    expect(await access(bob, a.id)).toMatchObject({ inChannel: false });
  });

  it('joining the channel one is in again only refreshes the state, without events', async () => {
    const room = await newVoiceChannel('rejoin');
    await join(carol, room.id);
    const events = (await g.outbox('guilds.voice.joined')).length;
    const again = await join(carol, room.id);
    expect(again.status).toBe(200);
    expect(again.body.state.channelId).toBe(room.id);
    expect((await g.outbox('guilds.voice.joined')).length).toBe(events);
    expect(await eventsWhere('guilds.voice.left', { userId: carol, channelId: room.id })).toEqual([]);
  });
});

describe('locked and full channels', () => {
  it('a locked channel refuses members (403) but admits those who may move members', async () => {
    const room = await newVoiceChannel('locked');
    expect((await g.call(owner, 'PATCH', `/v1/channels/${room.id}`, { isLocked: true })).status).toBe(200);
    expect(await join(dave, room.id)).toMatchObject({ status: 403, body: { error: 'This voice channel is locked' } });
    expect((await stateOf(dave))?.channel_id).not.toBe(room.id);
    expect((await join(owner, room.id)).status).toBe(200);
    await leave(owner);
  });

  it('a full channel refuses one more (403), counting only live states', async () => {
    const room = await newVoiceChannel('full');
    await g.call(owner, 'PATCH', `/v1/channels/${room.id}`, { userLimit: 1 });
    expect((await join(alice, room.id)).status).toBe(200);
    expect(await join(dave, room.id)).toMatchObject({ status: 403, body: { error: 'This voice channel is full' } });
    expect((await join(owner, room.id)).status).toBe(200);
    await leave(owner);
    // A state whose client stopped heartbeating no longer takes a place.
    await expireNow(alice);
    expect((await join(dave, room.id)).status).toBe(200);
    await leave(dave);
    await leave(alice);
  });

  it('admits exactly userLimit members when more join at once', async () => {
    const crowd = Array.from({ length: 8 }, () => newId());
    for (const u of crowd) await g.call(u, 'POST', `/v1/servers/${server.id}/join`);
    for (let round = 0; round < 3; round++) {
      const room = await newVoiceChannel(`race-limit-${round}`);
      await g.call(owner, 'PATCH', `/v1/channels/${room.id}`, { userLimit: 2 });
      const results = await Promise.all(crowd.map((u) => join(u, room.id)));
      expect(results.filter((r) => r.status === 200)).toHaveLength(2);
      expect(results.filter((r) => r.status === 403)).toHaveLength(6);
      expect((await g.db.query('SELECT count(*)::int AS n FROM voice_states WHERE channel_id = $1', [room.id])).rows[0].n).toBe(2);
      await Promise.all(crowd.map(leave));
    }
  });
});

describe('join-to-create', () => {
  let jtc: { id: string };
  beforeAll(async () => {
    jtc = await newVoiceChannel('Join to create');
    await g.call(owner, 'PATCH', `/v1/channels/${jtc.id}`, { categoryId: voice.categoryId });
    await setJtc(jtc.id);
  });

  it('creates a temporary channel owned by and named after the caller, in the same category, and puts them there', async () => {
    const res = await join(owner, jtc.id);
    expect(res.status).toBe(200);
    const channel = res.body.channel;
    expect(channel).toMatchObject({
      serverId: server.id,
      categoryId: voice.categoryId,
      channelType: 'voice',
      isTemporary: true,
      ownerId: owner,
      name: expect.stringMatching(/^owner .+'s channel$/),
    });
    expect(channel.id).not.toBe(jtc.id);
    expect(res.body.state.channelId).toBe(channel.id);
    expect(await channelRow(channel.id)).toMatchObject({ is_temporary: true, owner_id: owner });
    expect(await eventsWhere('guilds.channel.created', { id: channel.id })).toHaveLength(1);
    expect(await g.db.query('SELECT 1 FROM voice_states WHERE channel_id = $1', [jtc.id])).toMatchObject({ rowCount: 0 });
    await leave(owner);
    expect(await channelRow(channel.id)).toBeUndefined();
  });

  it('gives two people who join at once two channels', async () => {
    const [a, b] = await Promise.all([join(alice, jtc.id), join(bob, jtc.id)]);
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(a.body.channel.id).not.toBe(b.body.channel.id);
    expect(a.body.channel.ownerId).toBe(alice);
    expect(b.body.channel.ownerId).toBe(bob);
    expect(await stateOf(alice)).toMatchObject({ channel_id: a.body.channel.id });
    expect(await stateOf(bob)).toMatchObject({ channel_id: b.body.channel.id });
    await Promise.all([leave(alice), leave(bob)]);
    expect(await channelRow(a.body.channel.id)).toBeUndefined();
    expect(await channelRow(b.body.channel.id)).toBeUndefined();
  });

  it('lets the owner rename, lock, hide, limit and music-lock their channel without MANAGE_CHANNELS, and nothing more', async () => {
    const temp = (await join(carol, jtc.id)).body.channel;
    const patch = { name: 'Carol room', isLocked: true, isHidden: true, userLimit: 3, musicLocked: true };
    const res = await g.call(carol, 'PATCH', `/v1/channels/${temp.id}`, patch);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject(patch);
    expect(await channelRow(temp.id)).toMatchObject({
      name: 'Carol room',
      is_locked: true,
      is_hidden: true,
      user_limit: 3,
      music_locked: true,
    });

    expect((await g.call(carol, 'PATCH', `/v1/channels/${temp.id}`, { name: 'x', topic: 'mine' })).status).toBe(403);
    expect((await g.call(carol, 'PATCH', `/v1/channels/${voice.id}`, { name: 'not mine' })).status).toBe(403);
    // Hidden by its owner: to others it does not exist.
    expect((await g.call(dave, 'PATCH', `/v1/channels/${temp.id}`, { name: 'taken over' })).status).toBe(404);
    expect(await channelRow(temp.id)).toMatchObject({ name: 'Carol room', topic: null });
    expect((await join(dave, temp.id)).status).toBe(404);
    expect(await access(carol, temp.id)).toMatchObject({ inChannel: true, channel: { ownerId: carol, musicLocked: true } });
    await leave(carol);
  });

  it('deletes the temporary channel when the last person leaves, not before, with its event', async () => {
    const temp = (await join(alice, jtc.id)).body.channel;
    expect((await join(bob, temp.id)).status).toBe(200);
    await leave(alice);
    expect(await channelRow(temp.id)).toBeDefined();
    await join(bob, voice.id); // leaving by switching counts too
    expect(await channelRow(temp.id)).toBeUndefined();
    expect(await eventsWhere('guilds.channel.deleted', { id: temp.id })).toEqual([
      { id: temp.id, serverId: server.id, viewerIds: expect.any(Array) },
    ]);
    await leave(bob);
  });

  it('deletes it exactly once when the last two leave at once', async () => {
    const temp = (await join(alice, jtc.id)).body.channel;
    await join(bob, temp.id);
    const results = await Promise.all([leave(alice), leave(bob)]);
    expect(results.map((r) => r.status)).toEqual([204, 204]);
    expect(await channelRow(temp.id)).toBeUndefined();
    expect(await eventsWhere('guilds.channel.deleted', { id: temp.id })).toHaveLength(1);
  });

  it('never leaves a temporary channel empty nor a state in a deleted one when a join races the last leave', async () => {
    for (let round = 0; round < 5; round++) {
      const temp = (await join(alice, jtc.id)).body.channel;
      const [, joined] = await Promise.all([leave(alice), join(bob, temp.id)]);
      const exists = Boolean(await channelRow(temp.id));
      if (joined.status === 200) {
        expect(exists).toBe(true);
        expect(await stateOf(bob)).toMatchObject({ channel_id: temp.id });
        await leave(bob);
        expect(await channelRow(temp.id)).toBeUndefined();
      } else {
        expect(joined.status).toBe(404);
        expect(exists).toBe(false);
      }
    }
  });
});

describe('leave, state and heartbeat', () => {
  it('leave emits left and is a no-op (204, no event) when not connected', async () => {
    const room = await newVoiceChannel('leave');
    await join(dave, room.id);
    expect((await leave(dave)).status).toBe(204);
    expect(await stateOf(dave)).toBeUndefined();
    expect(await eventsWhere('guilds.voice.left', { userId: dave, channelId: room.id })).toEqual([
      { userId: dave, serverId: server.id, channelId: room.id, reason: 'left', channelEmptied: true },
    ]);
    const count = (await g.outbox('guilds.voice.left')).length;
    expect((await leave(dave)).status).toBe(204);
    expect((await g.outbox('guilds.voice.left')).length).toBe(count);
  });

  it('PATCH state sets selfMute/selfDeaf with an event once per change; 404 when not connected; 400 for an empty body', async () => {
    await join(dave, voice.id);
    const res = await g.call(dave, 'PATCH', '/v1/voice/state', { selfDeaf: true });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ userId: dave, selfDeaf: true, selfMute: false });
    expect(await stateOf(dave)).toMatchObject({ self_deaf: true, self_mute: false });
    expect((await g.call(dave, 'PATCH', '/v1/voice/state', { selfDeaf: true })).status).toBe(200);
    expect(await eventsWhere('guilds.voice.updated', { userId: dave, selfDeaf: true })).toHaveLength(1);
    expect((await g.call(dave, 'PATCH', '/v1/voice/state', {})).status).toBe(400);
    expect((await g.call(dave, 'PATCH', '/v1/voice/state', { selfMute: 'yes' })).status).toBe(400);
    await leave(dave);
    expect(await g.call(dave, 'PATCH', '/v1/voice/state', { selfMute: true })).toMatchObject({
      status: 404,
      body: { error: 'You are not connected to a voice channel' },
    });
  });

  it('a heartbeat pushes expiresAt forward; an expired state is no longer in the channel and cannot be revived', async () => {
    await join(carol, voice.id);
    await g.db.query("UPDATE voice_states SET expires_at = now() + interval '5 seconds' WHERE user_id = $1", [carol]);
    const beat = await g.call(carol, 'POST', '/v1/voice/heartbeat');
    expect(beat.status).toBe(200);
    expect(new Date(beat.body.expiresAt).getTime()).toBeGreaterThan(Date.now() + 50_000);

    await expireNow(carol);
    expect(await access(carol, voice.id)).toMatchObject({ inChannel: false });
    expect((await g.call(owner, 'GET', `/v1/servers/${server.id}/voice-states`)).body.map((s: Row) => s.userId)).not.toContain(carol);
    expect((await g.call(carol, 'POST', '/v1/voice/heartbeat')).status).toBe(404);
    expect((await g.call(carol, 'PATCH', '/v1/voice/state', { selfMute: true })).status).toBe(404);
    // Joining again replaces the expired state, saying that it ended.
    expect((await join(carol, voice.id)).status).toBe(200);
    expect(await eventsWhere('guilds.voice.left', { userId: carol, reason: 'expired' })).toHaveLength(1);
    await leave(carol);
  });
});

describe('the sweeper', () => {
  it('ends states without a heartbeat past their TTL, emits left "expired" and deletes the emptied temporary channel', async () => {
    const jtc = await newVoiceChannel('sweep-jtc');
    await setJtc(jtc.id);
    const temp = (await join(alice, jtc.id)).body.channel;
    await join(bob, voice.id);
    const in61s = new Date(Date.now() + 61_000);
    // Not yet due: nothing ends.
    expect(await sweepVoiceStates({ pool: g.db }, new Date(Date.now() + 30_000))).toBe(0);
    expect(await stateOf(alice)).toBeDefined();

    await g.call(bob, 'POST', '/v1/voice/heartbeat');
    await g.db.query("UPDATE voice_states SET expires_at = now() + interval '5 minutes' WHERE user_id = $1", [bob]);
    expect(await sweepVoiceStates({ pool: g.db }, in61s)).toBe(1);
    expect(await stateOf(alice)).toBeUndefined();
    expect(await stateOf(bob)).toBeDefined();
    expect(await channelRow(temp.id)).toBeUndefined();
    const [deleted] = await eventsWhere('guilds.channel.deleted', { id: temp.id });
    // The channel goes with the state: the event carries who viewed it (test/voice-channel-endings.test.ts).
    expect(await eventsWhere('guilds.voice.left', { userId: alice, channelId: temp.id })).toEqual([
      { userId: alice, serverId: server.id, channelId: temp.id, reason: 'expired', viewerIds: deleted?.viewerIds, channelEmptied: true },
    ]);
    expect(await eventsWhere('guilds.channel.deleted', { id: temp.id })).toHaveLength(1);
    await leave(bob);
    await setJtc(null);
  });

  it('has nothing to end for a member who left: the removal ended their state already', async () => {
    const kicked = newId();
    await g.call(kicked, 'POST', `/v1/servers/${server.id}/join`);
    await join(kicked, voice.id);
    expect((await g.call(owner, 'DELETE', `/v1/servers/${server.id}/members/${kicked}`)).status).toBe(204);
    expect(await sweepVoiceStates({ pool: g.db })).toBe(0);
    expect(await eventsWhere('guilds.voice.left', { userId: kicked })).toHaveLength(1);
  });

  it('ends each expired state once when several replicas sweep at once', async () => {
    const users: string[] = Array.from({ length: 12 }, () => newId());
    for (const u of users) {
      await g.call(u, 'POST', `/v1/servers/${server.id}/join`);
      await join(u, voice.id);
    }
    await g.db.query("UPDATE voice_states SET expires_at = now() - interval '1 second' WHERE user_id = ANY($1::uuid[])", [users]);
    const ended = await Promise.all([1, 2, 3].map(() => sweepVoiceStates({ pool: g.db }, new Date(), 5)));
    let total = ended.reduce((a, b) => a + b, 0);
    while (total < users.length) {
      const more = await sweepVoiceStates({ pool: g.db }, new Date(), 5);
      expect(more).toBeGreaterThan(0);
      total += more;
    }
    expect(total).toBe(users.length);
    const left = (await g.outbox('guilds.voice.left')).filter((e) => users.includes(e.data.userId as string));
    expect(left).toHaveLength(users.length);
    expect(new Set(left.map((e) => e.data.userId)).size).toBe(users.length);
  });
});

describe('leaving the server ends the voice state', () => {
  const removals: [string, (userId: string) => Promise<{ status: number }>][] = [
    ['a kick', (userId) => g.call(owner, 'DELETE', `/v1/servers/${server.id}/members/${userId}`)],
    ['a ban', (userId) => g.call(owner, 'PUT', `/v1/servers/${server.id}/bans/${userId}`, {})],
    ['leaving', (userId) => g.call(userId, 'DELETE', `/v1/servers/${server.id}/members/@me`)],
  ];

  it.each(removals)(
    '%s ends it in the same transaction (left "removed"), so a rejoin is not back in voice: no state, no grant',
    async (_, remove) => {
      const member = await g.knownUser('removed');
      expect((await g.call(member, 'POST', `/v1/servers/${server.id}/join`)).status).toBe(200);
      expect((await join(member, voice.id)).status).toBe(200);
      expect([200, 204]).toContain((await remove(member)).status);

      // No sweep ran: the removal itself ended the state and wrote its event.
      expect(await stateOf(member)).toBeUndefined();
      expect(await eventsWhere('guilds.voice.left', { userId: member })).toEqual([
        // Others of this file may sit in the shared channel (test/voice-emptied-channels.test.ts asks).
        { userId: member, serverId: server.id, channelId: voice.id, reason: 'removed', channelEmptied: expect.any(Boolean) },
      ]);
      await g.call(owner, 'DELETE', `/v1/servers/${server.id}/bans/${member}`);
      expect((await g.call(member, 'POST', `/v1/servers/${server.id}/join`)).status).toBe(200);
      const grant = await g.call(member, 'POST', '/v1/voice/grant');
      expect(grant).toMatchObject({ status: 404, body: { error: 'You are not connected to a voice channel' } });
      expect((await g.call(owner, 'GET', `/v1/servers/${server.id}/voice-states`)).body.map((s: Row) => s.userId)).not.toContain(member);
      expect(await access(member, voice.id)).toMatchObject({ isMember: true, inChannel: false });
      expect((await g.call(member, 'POST', '/v1/voice/heartbeat')).status).toBe(404);
    },
  );

  it('a kick deletes the temporary channel it leaves empty, with its event', async () => {
    const jtc = await newVoiceChannel('kick-jtc');
    await setJtc(jtc.id);
    const member = newId();
    await g.call(member, 'POST', `/v1/servers/${server.id}/join`);
    const temp = (await join(member, jtc.id)).body.channel;
    expect((await g.call(owner, 'DELETE', `/v1/servers/${server.id}/members/${member}`)).status).toBe(204);
    expect(await channelRow(temp.id)).toBeUndefined();
    expect(await eventsWhere('guilds.channel.deleted', { id: temp.id })).toHaveLength(1);
    await setJtc(null);
  });

  it('deleting the server takes its voice states with its members', async () => {
    const doomed = (await g.call(owner, 'POST', '/v1/servers', { name: 'Doomed', isPublic: true })).body;
    const member = newId();
    expect((await g.call(member, 'POST', `/v1/servers/${doomed.id}/join`)).status).toBe(200);
    const doomedVoice = (await g.call(owner, 'GET', `/v1/servers/${doomed.id}/channels`)).body.find((c: Row) => c.channelType === 'voice');
    expect((await join(member, doomedVoice.id)).status).toBe(200);
    expect((await g.call(owner, 'DELETE', `/v1/servers/${doomed.id}`)).status).toBe(204);
    expect(await stateOf(member)).toBeUndefined();
  });

  it('a state of someone who is not a member cannot be stored (what a join racing a kick retries on)', async () => {
    const outsider = newId();
    await expect(
      g.db.query("INSERT INTO voice_states (user_id, server_id, channel_id, expires_at) VALUES ($1, $2, $3, now() + interval '1 minute')", [
        outsider,
        server.id,
        voice.id,
      ]),
    ).rejects.toMatchObject({ code: '23503' });
  });
});

describe('the TTL', () => {
  it('is VOICE_STATE_TTL_SECONDS, 60 by default, and at least 1', () => {
    const env = { ...g.runtime.env };
    expect(loadConfig(GuildsConfig, env).VOICE_STATE_TTL_SECONDS).toBe(60);
    expect(loadConfig(GuildsConfig, { ...env, VOICE_STATE_TTL_SECONDS: '2' }).VOICE_STATE_TTL_SECONDS).toBe(2);
    expect(() => loadConfig(GuildsConfig, { ...env, VOICE_STATE_TTL_SECONDS: '0' })).toThrow(/VOICE_STATE_TTL_SECONDS/);
  });

  it('with a 1 s TTL, the running sweeper disconnects a client that stopped heartbeating', async () => {
    const short = {
      pool: g.db,
      bus: g.runtime.bus,
      voiceStateTtlSeconds: 1,
      issueMediaGrant: mediaGrantIssuer(loadConfig(GuildsConfig, {})),
    };
    const { state } = await joinVoice(short, { userId: dave, requestId: 'ttl-test' }, voice.id);
    expect(new Date(state.expiresAt).getTime() - Date.now()).toBeLessThanOrEqual(1_000);
    const sweeper = startVoiceSweeper(short, g.runtime.log, 1);
    try {
      await until(async () => (await stateOf(dave)) === undefined, { timeoutMs: 5_000 });
    } finally {
      await sweeper.stop();
    }
    expect(await eventsWhere('guilds.voice.left', { userId: dave, channelId: voice.id, reason: 'expired' })).toHaveLength(1);
  });
});

describe('moving members', () => {
  let afk: { id: string };
  beforeAll(async () => {
    afk = await newVoiceChannel('AFK');
    expect((await g.call(owner, 'PATCH', `/v1/servers/${server.id}`, { afkChannelId: afk.id })).status).toBe(200);
  });

  it('moves a member to the AFK channel with MOVE_MEMBERS, and emits moved', async () => {
    await join(alice, voice.id);
    const res = await g.call(owner, 'POST', '/v1/voice/move', { userId: alice, channelId: afk.id });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ userId: alice, channelId: afk.id, serverId: server.id });
    expect(await stateOf(alice)).toMatchObject({ channel_id: afk.id });
    expect(await eventsWhere('guilds.voice.moved', { userId: alice, channelId: afk.id })).toEqual([
      expect.objectContaining({ fromChannelId: voice.id, movedBy: owner }),
    ]);
    await leave(alice);
  });

  it('needs MOVE_MEMBERS (403), a connected member of this server (400), a voice target (400) and a visible one (404)', async () => {
    await join(bob, voice.id);
    const cases: [string, Row, number][] = [
      [carol, { userId: bob, channelId: afk.id }, 403],
      [owner, { userId: dave, channelId: afk.id }, 400],
      [owner, { userId: bob, channelId: text.id }, 400],
      [owner, { userId: bob, channelId: newId() }, 404],
      [owner, { userId: 'x', channelId: afk.id }, 400],
    ];
    for (const [actor, body, status] of cases) {
      const res = await g.call(actor, 'POST', '/v1/voice/move', body);
      expect(res.status, JSON.stringify(body)).toBe(status);
      expect(res.body).toEqual({ error: expect.any(String) });
    }
    const moderator = (await g.call(owner, 'POST', `/v1/servers/${server.id}/roles`, { permissions: toMask(Permission.MOVE_MEMBERS) }))
      .body;
    await g.call(owner, 'PUT', `/v1/servers/${server.id}/members/${carol}/roles/${moderator.id}`);
    expect((await g.call(carol, 'POST', '/v1/voice/move', { userId: bob, channelId: afk.id })).status).toBe(200);
    expect(await stateOf(bob)).toMatchObject({ channel_id: afk.id });
    await leave(bob);
  });

  it('moving the last person out of a temporary channel deletes it', async () => {
    const jtc = await newVoiceChannel('move-jtc');
    await setJtc(jtc.id);
    const temp = (await join(dave, jtc.id)).body.channel;
    expect((await g.call(owner, 'POST', '/v1/voice/move', { userId: dave, channelId: jtc.id })).status).toBe(400);
    expect((await g.call(owner, 'POST', '/v1/voice/move', { userId: dave, channelId: afk.id })).status).toBe(200);
    expect(await channelRow(temp.id)).toBeUndefined();
    await leave(dave);
    await setJtc(null);
  });
});

describe('listing voice states', () => {
  it('lists only channels the caller can see; 404 to strangers of a private server, 403 to non-members of a public one', async () => {
    const secret = await newVoiceChannel('secret');
    await g.call(owner, 'PUT', `/v1/channels/${secret.id}/permissions`, {
      roleId: server.id,
      allowBits: 0,
      denyBits: toMask(Permission.VIEW_CHANNEL),
    });
    await join(owner, secret.id);
    await join(alice, voice.id);
    const seen = (await g.call(bob, 'GET', `/v1/servers/${server.id}/voice-states`)).body.map((s: Row) => s.userId);
    expect(seen).toContain(alice);
    expect(seen).not.toContain(owner);
    expect((await g.call(owner, 'GET', `/v1/servers/${server.id}/voice-states`)).body.map((s: Row) => s.userId)).toContain(owner);
    expect((await g.call(stranger, 'GET', `/v1/servers/${privateServer.id}/voice-states`)).status).toBe(404);
    expect((await g.call(stranger, 'GET', `/v1/servers/${server.id}/voice-states`)).status).toBe(403);
    await leave(owner);
    await leave(alice);
  });
});

describe('media grants for voice', () => {
  const verifier = new TokenVerifier('devkey', 'secret');

  it('hands a LiveKit grant for the channel room with the join, publishing only with SPEAK', async () => {
    const joined = await join(carol, voice.id);
    expect(joined.status).toBe(200);
    expect(joined.body.grant.url).toBe('ws://127.0.0.1:7880');
    const claims = await verifier.verify(joined.body.grant.token);
    expect(claims.sub).toBe(carol);
    expect(claims.video).toMatchObject({ room: voice.id, roomJoin: true, canSubscribe: true, canPublish: true });
    expect((claims.exp as number) - Math.floor(Date.now() / 1000)).toBeLessThanOrEqual(300);
    await expect(new TokenVerifier('devkey', 'another secret').verify(joined.body.grant.token)).rejects.toThrow();

    // Denied SPEAK in this channel: the next grant may listen only.
    const muted = await g.call(owner, 'PUT', `/v1/channels/${voice.id}/permissions`, {
      userId: carol,
      allowBits: 0,
      denyBits: toMask(Permission.SPEAK),
    });
    expect(muted.status).toBe(200);
    const grant = await g.call(carol, 'POST', '/v1/voice/grant');
    expect(grant.status).toBe(200);
    expect((await verifier.verify(grant.body.token)).video).toMatchObject({ room: voice.id, canPublish: false, canSubscribe: true });
    await g.call(owner, 'DELETE', `/v1/channels/${voice.id}/permissions/${muted.body.id}`);
    await leave(carol);
  });

  it('follows a move: the next grant is for the new room', async () => {
    const other = await newVoiceChannel('grant-move');
    await join(carol, voice.id);
    expect((await g.call(owner, 'POST', '/v1/voice/move', { userId: carol, channelId: other.id })).status).toBe(200);
    const grant = await g.call(carol, 'POST', '/v1/voice/grant');
    expect((await verifier.verify(grant.body.token)).video?.room).toBe(other.id);
    await leave(carol);
  });

  it('follows a move into a channel the member cannot see: the grant is for that room, listening only (no SPEAK without VIEW_CHANNEL)', async () => {
    const jail = await newVoiceChannel('jail');
    const deny = { userId: carol, allowBits: 0, denyBits: toMask(Permission.VIEW_CHANNEL | Permission.CONNECT) };
    expect((await g.call(owner, 'PUT', `/v1/channels/${jail.id}/permissions`, deny)).status).toBe(200);
    await join(carol, voice.id);
    expect((await g.call(owner, 'POST', '/v1/voice/move', { userId: carol, channelId: jail.id })).status).toBe(200);

    const grant = await g.call(carol, 'POST', '/v1/voice/grant');
    expect(grant.status).toBe(200);
    expect((await verifier.verify(grant.body.token)).video).toMatchObject({ room: jail.id, canPublish: false, canSubscribe: true });
    expect((await g.call(owner, 'PATCH', `/v1/servers/${server.id}/voice-states/${carol}`, { deaf: true })).status).toBe(200);
    const deafened = await g.call(carol, 'POST', '/v1/voice/grant');
    expect((await verifier.verify(deafened.body.token)).video).toMatchObject({ room: jail.id, canSubscribe: false });
    // Still not a channel of theirs to open.
    expect((await g.call(carol, 'GET', `/v1/channels/${jail.id}`)).status).toBe(404);
    await leave(carol);
  });

  it('lists the caller their own state in a channel hidden from them, and nobody else there', async () => {
    const jail = await newVoiceChannel('jail-list');
    const deny = { userId: carol, allowBits: 0, denyBits: toMask(Permission.VIEW_CHANNEL) };
    expect((await g.call(owner, 'PUT', `/v1/channels/${jail.id}/permissions`, deny)).status).toBe(200);
    await join(owner, jail.id);
    await join(carol, voice.id);
    expect((await g.call(owner, 'POST', '/v1/voice/move', { userId: carol, channelId: jail.id })).status).toBe(200);

    const seenByCarol = (await g.call(carol, 'GET', `/v1/servers/${server.id}/voice-states`)).body as Row[];
    expect(seenByCarol.filter((s) => s.channelId === jail.id)).toEqual([expect.objectContaining({ userId: carol, channelId: jail.id })]);
    const seenByBob = (await g.call(bob, 'GET', `/v1/servers/${server.id}/voice-states`)).body as Row[];
    expect(
      seenByBob
        .filter((s) => s.channelId === jail.id)
        .map((s) => s.userId)
        .sort(),
    ).toEqual([carol, owner].sort());
    await leave(carol);
    await leave(owner);
  });

  it('answers 404 for a grant when not connected', async () => {
    const res = await g.call(carol, 'POST', '/v1/voice/grant');
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: 'You are not connected to a voice channel' });
  });
});

describe('moderating voice: server mute, server deafen and disconnect', () => {
  const verifier = new TokenVerifier('devkey', 'secret');
  const [target, moderator] = [newId(), newId()];
  beforeAll(async () => {
    for (const u of [target, moderator]) expect((await g.call(u, 'POST', `/v1/servers/${server.id}/join`)).status).toBe(200);
  });
  const moderate = (actor: string, body: Row, serverId: string = server.id, userId: string = target) =>
    g.call(actor, 'PATCH', `/v1/servers/${serverId}/voice-states/${userId}`, body);
  const disconnect = (actor: string, serverId: string = server.id, userId: string = target) =>
    g.call(actor, 'DELETE', `/v1/servers/${serverId}/voice-states/${userId}`);
  const nextGrant = async (userId: string) => {
    const res = await g.call(userId, 'POST', '/v1/voice/grant');
    expect(res.status).toBe(200);
    return (await verifier.verify(res.body.token)).video;
  };
  const flagsOf = async (userId: string) =>
    (await g.db.query('SELECT server_mute, server_deaf FROM voice_states WHERE user_id = $1', [userId])).rows[0];
  const memberFlagsOf = async (userId: string) =>
    (await g.db.query('SELECT voice_mute, voice_deaf FROM members WHERE server_id = $1 AND user_id = $2', [server.id, userId])).rows[0];
  async function grantRole(userId: string, bit: bigint) {
    const role = (await g.call(owner, 'POST', `/v1/servers/${server.id}/roles`, { permissions: toMask(bit) })).body;
    expect((await g.call(owner, 'PUT', `/v1/servers/${server.id}/members/${userId}/roles/${role.id}`)).status).toBe(204);
  }

  it('server-mutes and deafens: the state, one updated event per change, and the next grant follow it, also after a move', async () => {
    await join(target, voice.id);
    const muted = await moderate(owner, { mute: true });
    expect(muted.status).toBe(200);
    expect(muted.body).toMatchObject({ userId: target, channelId: voice.id, serverMute: true, serverDeaf: false, selfMute: false });
    expect(await flagsOf(target)).toEqual({ server_mute: true, server_deaf: false });
    expect(await nextGrant(target)).toMatchObject({ room: voice.id, canPublish: false, canSubscribe: true });

    expect((await moderate(owner, { deaf: true })).body).toMatchObject({ serverMute: true, serverDeaf: true });
    expect(await nextGrant(target)).toMatchObject({ canPublish: false, canSubscribe: false });
    expect((await moderate(owner, { mute: true, deaf: true })).status).toBe(200);
    const updates = (await eventsWhere('guilds.voice.updated', { userId: target })).map((e) => [e.serverMute, e.serverDeaf]);
    expect(updates).toEqual([
      [true, false],
      [true, true],
    ]);

    const other = await newVoiceChannel('moderated-move');
    expect((await g.call(owner, 'POST', '/v1/voice/move', { userId: target, channelId: other.id })).body).toMatchObject({
      serverMute: true,
    });
    expect((await join(target, voice.id)).body.state).toMatchObject({ serverMute: true, serverDeaf: true });
    expect(await nextGrant(target)).toMatchObject({ room: voice.id, canPublish: false, canSubscribe: false });

    expect((await moderate(owner, { mute: false, deaf: false })).body).toMatchObject({ serverMute: false, serverDeaf: false });
    expect(await nextGrant(target)).toMatchObject({ canPublish: true, canSubscribe: true });
    await leave(target);
  });

  it("server mute and deafen are the member's: leaving voice, or the state expiring, and joining again keeps them until lifted", async () => {
    await join(target, voice.id);
    expect((await moderate(owner, { mute: true, deaf: true })).status).toBe(200);
    expect(await memberFlagsOf(target)).toEqual({ voice_mute: true, voice_deaf: true });

    await expireNow(target);
    const afterExpiry = await join(target, voice.id);
    expect(afterExpiry.status).toBe(200);
    expect(afterExpiry.body.state).toMatchObject({ channelId: voice.id, serverMute: true, serverDeaf: true });
    expect(await verifier.verify(afterExpiry.body.grant.token)).toMatchObject({ video: { canPublish: false, canSubscribe: false } });

    expect((await leave(target)).status).toBe(204);
    const afterLeave = await join(target, voice.id);
    expect(afterLeave.body.state).toMatchObject({ serverMute: true, serverDeaf: true });
    expect(await flagsOf(target)).toEqual({ server_mute: true, server_deaf: true });
    expect(await verifier.verify(afterLeave.body.grant.token)).toMatchObject({ video: { canPublish: false, canSubscribe: false } });

    expect((await moderate(owner, { mute: false })).body).toMatchObject({ serverMute: false, serverDeaf: true });
    await leave(target);
    expect((await join(target, voice.id)).body.state).toMatchObject({ serverMute: false, serverDeaf: true });
    expect((await moderate(owner, { deaf: false })).status).toBe(200);
    await leave(target);
    expect((await join(target, voice.id)).body.state).toMatchObject({ serverMute: false, serverDeaf: false });
    expect(await memberFlagsOf(target)).toEqual({ voice_mute: false, voice_deaf: false });
    await leave(target);
  });

  it("are per server, and end with the membership: another server's voice starts without them, and so does a member who left and joined again", async () => {
    const elsewhere = (await g.call(owner, 'POST', '/v1/servers', { name: 'Elsewhere', isPublic: true })).body as { id: string };
    expect((await g.call(target, 'POST', `/v1/servers/${elsewhere.id}/join`)).status).toBe(200);
    const elsewhereVoice = (await g.call(owner, 'GET', `/v1/servers/${elsewhere.id}/channels`)).body.find(
      (c: Row) => c.channelType === 'voice',
    );
    await join(target, voice.id);
    expect((await moderate(owner, { mute: true })).status).toBe(200);

    expect((await join(target, elsewhereVoice.id)).body.state).toMatchObject({ serverId: elsewhere.id, serverMute: false });
    expect((await join(target, voice.id)).body.state).toMatchObject({ serverId: server.id, serverMute: true });

    expect((await g.call(target, 'DELETE', `/v1/servers/${server.id}/members/@me`)).status).toBe(204);
    expect(await memberFlagsOf(target)).toBeUndefined();
    expect((await g.call(target, 'POST', `/v1/servers/${server.id}/join`)).status).toBe(200);
    expect((await join(target, voice.id)).body.state).toMatchObject({ serverMute: false, serverDeaf: false });
    await leave(target);
  });

  it('needs MUTE_MEMBERS for mute and DEAFEN_MEMBERS for deaf (403), a connected member (400), and hides the server from strangers (404), changing nothing', async () => {
    await join(target, voice.id);
    const refused: [string, Row, number, string?, string?][] = [
      [moderator, { mute: true }, 403],
      [moderator, { deaf: true }, 403],
      [owner, { mute: true }, 400, server.id, dave],
      [owner, {}, 400],
      [owner, { mute: 'yes' }, 400],
      [stranger, { mute: true }, 404, privateServer.id],
      [stranger, { mute: true }, 403],
    ];
    for (const [actor, body, status, serverId, userId] of refused) {
      const res = await moderate(actor, body, serverId, userId);
      expect(res.status, JSON.stringify([actor, body])).toBe(status);
      expect(res.body).toEqual({ error: expect.any(String) });
    }
    expect(await flagsOf(target)).toEqual({ server_mute: false, server_deaf: false });

    await grantRole(moderator, Permission.MUTE_MEMBERS);
    expect((await moderate(moderator, { mute: true })).status).toBe(200);
    const deafen = await moderate(moderator, { deaf: true });
    expect(deafen.status).toBe(403);
    expect(deafen.body).toEqual({ error: 'Missing permission DEAFEN_MEMBERS' });
    expect(await flagsOf(target)).toEqual({ server_mute: true, server_deaf: false });
    await grantRole(moderator, Permission.DEAFEN_MEMBERS);
    expect((await moderate(moderator, { mute: false, deaf: true })).status).toBe(200);
    expect(await flagsOf(target)).toEqual({ server_mute: false, server_deaf: true });
    await moderate(owner, { deaf: false });
    await leave(target);
  });

  it('disconnects with MOVE_MEMBERS: the state ends (left "disconnected") and no grant follows; 403 without the bit, 400 when not connected, 404 to strangers', async () => {
    const room = await newVoiceChannel('disconnect');
    await join(target, room.id);
    const denied = await disconnect(moderator);
    expect(denied.status).toBe(403);
    expect(denied.body).toEqual({ error: 'Missing permission MOVE_MEMBERS' });
    expect((await disconnect(stranger, privateServer.id)).status).toBe(404);
    expect(await stateOf(target)).toMatchObject({ channel_id: room.id });

    await grantRole(moderator, Permission.MOVE_MEMBERS);
    const res = await disconnect(moderator);
    expect(res.status).toBe(204);
    expect(await stateOf(target)).toBeUndefined();
    expect(await eventsWhere('guilds.voice.left', { userId: target, channelId: room.id })).toEqual([
      { userId: target, serverId: server.id, channelId: room.id, reason: 'disconnected', channelEmptied: true },
    ]);
    const grant = await g.call(target, 'POST', '/v1/voice/grant');
    expect(grant.status).toBe(404);
    expect(grant.body).toEqual({ error: 'You are not connected to a voice channel' });
    const again = await disconnect(moderator);
    expect(again.status).toBe(400);
    expect(again.body).toEqual({ error: 'That member is not connected to a voice channel of this server' });
  });

  it('a member in a channel hidden from the moderator is not connected for them: 400 as for nobody, never a telling 403, changing nothing', async () => {
    for (const bit of [Permission.MUTE_MEMBERS, Permission.DEAFEN_MEMBERS, Permission.MOVE_MEMBERS]) await grantRole(moderator, bit);
    const room = await newVoiceChannel('hidden-from-moderator');
    const deny = { userId: moderator, allowBits: 0, denyBits: toMask(Permission.VIEW_CHANNEL) };
    expect((await g.call(owner, 'PUT', `/v1/channels/${room.id}/permissions`, deny)).status).toBe(200);
    await join(target, room.id);
    const refused = [
      await moderate(moderator, { mute: true }),
      await moderate(moderator, { deaf: true }),
      await disconnect(moderator),
      await g.call(moderator, 'POST', '/v1/voice/move', { userId: target, channelId: voice.id }),
    ];
    for (const res of refused) {
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error: 'That member is not connected to a voice channel of this server' });
    }
    expect(await stateOf(target)).toMatchObject({ channel_id: room.id });
    expect(await flagsOf(target)).toEqual({ server_mute: false, server_deaf: false });
    await leave(target);
  });
});

describe('migration 0218', () => {
  const migration = readFileSync(new URL('../migrations/0218_member_voice_moderation.sql', import.meta.url), 'utf8');

  it("makes a server mute or deafen standing on a voice state the member's", async () => {
    const [muted, deafened, plain] = [newId(), newId(), newId()];
    for (const u of [muted, deafened, plain]) {
      expect((await g.call(u, 'POST', `/v1/servers/${server.id}/join`)).status).toBe(200);
      expect((await join(u, voice.id)).status).toBe(200);
    }
    const users = [muted, deafened, plain];
    // As the code before it left them: the flags on the state only.
    await g.db.query('UPDATE voice_states SET server_mute = (user_id = $2), server_deaf = (user_id = $3) WHERE user_id = ANY($1)', [
      users,
      muted,
      deafened,
    ]);
    await g.db.query('UPDATE members SET voice_mute = false, voice_deaf = false WHERE user_id = ANY($1)', [users]);

    await g.db.query(migration);

    const rows = await g.db.query('SELECT user_id, voice_mute, voice_deaf FROM members WHERE server_id = $1 AND user_id = ANY($2)', [
      server.id,
      users,
    ]);
    expect(Object.fromEntries(rows.rows.map((r) => [r.user_id, [r.voice_mute, r.voice_deaf]]))).toEqual({
      [muted]: [true, false],
      [deafened]: [false, true],
      [plain]: [false, false],
    });
    for (const u of users) await leave(u);
  });
});
