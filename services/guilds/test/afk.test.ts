import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { moveIdleMembersToAfk } from '../src/domain/voice.ts';
import { newId, startGuilds } from './harness.ts';

const g = await startGuilds();
const d = { pool: g.db };
afterAll(() => g.close());

type Row = Record<string, unknown>;
const owner = newId();
const [alice, bob, carol] = [newId(), newId(), newId()];
let server: { id: string };
let room: { id: string };
let afk: { id: string };

const join = (userId: string, channelId: string) => g.call(userId, 'POST', '/v1/voice/join', { channelId });
const channelOf = async (userId: string) =>
  (await g.db.query('SELECT channel_id FROM voice_states WHERE user_id = $1', [userId])).rows[0]?.channel_id as string | undefined;
const movedEvents = async (userId: string) =>
  (await g.outbox('guilds.voice.moved')).map((e) => e.data).filter((d: Row) => d.userId === userId);
/** The injected clock: `seconds` after now. */
const inSeconds = (seconds: number) => new Date(Date.now() + seconds * 1000);
const newVoice = async (name: string) =>
  (await g.call(owner, 'POST', `/v1/servers/${server.id}/channels`, { name, channelType: 'voice' })).body as { id: string };

beforeAll(async () => {
  server = (await g.call(owner, 'POST', '/v1/servers', { name: 'AFK', isPublic: true })).body;
  for (const u of [alice, bob, carol]) expect((await g.call(u, 'POST', `/v1/servers/${server.id}/join`)).status).toBe(200);
  room = await newVoice('room');
  afk = await newVoice('afk');
});

describe('afkTimeoutSeconds', () => {
  it('is 300 by default and takes only 60, 300, 900, 1800 or 3600 in PATCH', async () => {
    expect(server).toMatchObject({ afkTimeoutSeconds: 300 });
    for (const bad of [0, 59, 301, 7200, '300']) {
      const res = await g.call(owner, 'PATCH', `/v1/servers/${server.id}`, { afkTimeoutSeconds: bad });
      expect(res.status, String(bad)).toBe(400);
      expect(res.body).toEqual({ error: expect.any(String) });
    }
    const res = await g.call(owner, 'PATCH', `/v1/servers/${server.id}`, { afkTimeoutSeconds: 60, afkChannelId: afk.id });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ afkTimeoutSeconds: 60, afkChannelId: afk.id });
    expect((await g.call(alice, 'GET', `/v1/servers/${server.id}`)).body.afkTimeoutSeconds).toBe(60);
  });
});

describe('moving idle members to the AFK channel', () => {
  it('moves a member idle past the timeout, once, with the same event as a manual move', async () => {
    await join(alice, room.id);
    expect(await moveIdleMembersToAfk(d, inSeconds(59))).toBe(0);
    expect(await channelOf(alice)).toBe(room.id);
    expect(await moveIdleMembersToAfk(d, inSeconds(61))).toBe(1);
    expect(await channelOf(alice)).toBe(afk.id);
    expect(await movedEvents(alice)).toEqual([
      expect.objectContaining({ userId: alice, serverId: server.id, channelId: afk.id, fromChannelId: room.id, movedBy: null }),
    ]);
    // Never out of the AFK channel itself.
    expect(await moveIdleMembersToAfk(d, inSeconds(3600))).toBe(0);
    expect(await channelOf(alice)).toBe(afk.id);
    await g.call(alice, 'POST', '/v1/voice/leave');
  });

  it('counts speaking heartbeats, state changes and moderator moves as activity, not a bare heartbeat', async () => {
    await join(bob, room.id);
    await g.db.query("UPDATE voice_states SET last_active_at = now() - interval '50 seconds' WHERE user_id = $1", [bob]);
    expect((await g.call(bob, 'POST', '/v1/voice/heartbeat')).status).toBe(200);
    expect(await moveIdleMembersToAfk(d, inSeconds(15))).toBe(1);
    expect(await channelOf(bob)).toBe(afk.id);

    const other = await newVoice('other-room');
    const cases: [string, (userId: string) => Promise<unknown>, string][] = [
      ['speaking', (u) => g.call(u, 'POST', '/v1/voice/heartbeat', { speaking: true }), room.id],
      ['state change', (u) => g.call(u, 'PATCH', '/v1/voice/state', { selfMute: true }), room.id],
      ['moderator move', (u) => g.call(owner, 'POST', '/v1/voice/move', { userId: u, channelId: other.id }), other.id],
    ];
    for (const [name, act, expected] of cases) {
      await join(carol, room.id);
      await g.db.query("UPDATE voice_states SET last_active_at = now() - interval '50 seconds', self_mute = false WHERE user_id = $1", [
        carol,
      ]);
      await act(carol);
      expect(await moveIdleMembersToAfk(d, inSeconds(15)), name).toBe(0);
      expect(await channelOf(carol), name).toBe(expected);
    }
    await g.call(bob, 'POST', '/v1/voice/leave');
    await g.call(carol, 'POST', '/v1/voice/leave');
  });

  it('refuses a heartbeat body other than speaking: true (400)', async () => {
    await join(bob, room.id);
    const res = await g.call(bob, 'POST', '/v1/voice/heartbeat', { speaking: 'yes' });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: expect.any(String) });
    await g.call(bob, 'POST', '/v1/voice/leave');
  });

  it('moves each idle member once when several replicas run at once', async () => {
    const users = Array.from({ length: 6 }, newId);
    for (const u of users) {
      expect((await g.call(u, 'POST', `/v1/servers/${server.id}/join`)).status).toBe(200);
      await join(u, room.id);
    }
    const at = inSeconds(120);
    const counts = await Promise.all([moveIdleMembersToAfk(d, at), moveIdleMembersToAfk(d, at), moveIdleMembersToAfk(d, at)]);
    expect(counts.reduce((a, b) => a + b, 0)).toBe(users.length);
    for (const u of users) {
      expect(await channelOf(u)).toBe(afk.id);
      expect(await movedEvents(u)).toHaveLength(1);
    }
    for (const u of users) await g.call(u, 'POST', '/v1/voice/leave');
  });

  it('moves nobody without an AFK channel, and deleting the AFK channel clears the setting', async () => {
    const doomed = await newVoice('doomed-afk');
    expect((await g.call(owner, 'PATCH', `/v1/servers/${server.id}`, { afkChannelId: doomed.id })).status).toBe(200);
    expect((await g.call(owner, 'DELETE', `/v1/channels/${doomed.id}`)).status).toBe(204);
    expect((await g.call(owner, 'GET', `/v1/servers/${server.id}`)).body.afkChannelId).toBeNull();
    await join(alice, room.id);
    expect(await moveIdleMembersToAfk(d, inSeconds(3600))).toBe(0);
    expect(await channelOf(alice)).toBe(room.id);
    await g.call(alice, 'POST', '/v1/voice/leave');
  });
});

describe('the AFK channel and the join-to-create channel', () => {
  it('refuses to make them one channel (400), either way round or at once, changing nothing', async () => {
    const jtc = await newVoice('jtc');
    expect((await g.call(owner, 'PATCH', `/v1/servers/${server.id}`, { afkChannelId: afk.id, jtcChannelId: jtc.id })).status).toBe(200);
    const before = (await g.call(owner, 'GET', `/v1/servers/${server.id}`)).body;
    for (const body of [{ afkChannelId: jtc.id }, { jtcChannelId: afk.id }, { afkChannelId: room.id, jtcChannelId: room.id }]) {
      const res = await g.call(owner, 'PATCH', `/v1/servers/${server.id}`, { name: 'renamed', ...body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body).toEqual({ error: 'afkChannelId and jtcChannelId cannot be the same channel' });
    }
    expect((await g.call(owner, 'GET', `/v1/servers/${server.id}`)).body).toEqual(before);
    // Swapping them in one patch is fine: they differ once it applies.
    const swapped = await g.call(owner, 'PATCH', `/v1/servers/${server.id}`, { afkChannelId: jtc.id, jtcChannelId: afk.id });
    expect(swapped.status).toBe(200);
    expect(swapped.body).toMatchObject({ afkChannelId: jtc.id, jtcChannelId: afk.id });
    expect((await g.call(owner, 'PATCH', `/v1/servers/${server.id}`, { afkChannelId: null, jtcChannelId: null })).status).toBe(200);
  });

  it('moves nobody into the join-to-create channel, even one stored as the AFK channel too', async () => {
    const jtc = await newVoice('jtc-and-afk');
    // Stored before the two were refused as one: nobody stays in a join-to-create channel.
    await g.db.query('UPDATE servers SET afk_channel_id = $2, jtc_channel_id = $2 WHERE id = $1', [server.id, jtc.id]);
    await join(alice, room.id);
    expect(await moveIdleMembersToAfk(d, inSeconds(3600))).toBe(0);
    expect(await channelOf(alice)).toBe(room.id);
    expect(await movedEvents(alice)).not.toContainEqual(expect.objectContaining({ channelId: jtc.id }));
    await g.call(alice, 'POST', '/v1/voice/leave');
    await g.db.query('UPDATE servers SET afk_channel_id = NULL, jtc_channel_id = NULL WHERE id = $1', [server.id]);
  });
});
