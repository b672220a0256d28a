import { Permission, toMask } from '@chat/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { moveIdleMembersToAfk, sweepVoiceStates } from '../src/domain/voice.ts';
import { newId, startGuilds } from './harness.ts';

/**
 * Voice states that end with their channel: a voice channel deleted with people in it, and a
 * temporary channel deleted as the last person goes. The gateway cannot ask who viewed a channel
 * once it is gone, so the events carry it (`viewerIds`, `fromViewerIds`), written before the
 * channel's own guilds.channel.deleted.
 */

const g = await startGuilds();
afterAll(() => g.close());

type Row = Record<string, unknown>;
const [alice, bob, watcher] = [newId(), newId(), newId()];
let owner: string;
let server: { id: string };
let lobby: { id: string };
let jtc: { id: string };

beforeAll(async () => {
  owner = await g.knownUser('owner');
  server = (await g.call(owner, 'POST', '/v1/servers', { name: 'Endings', isPublic: true })).body;
  for (const u of [alice, bob, watcher]) expect((await g.call(u, 'POST', `/v1/servers/${server.id}/join`)).status).toBe(200);
  lobby = await newVoiceChannel('lobby');
  jtc = await newVoiceChannel('join to create');
  expect((await g.call(owner, 'PATCH', `/v1/servers/${server.id}`, { jtcChannelId: jtc.id })).status).toBe(200);
});

const newVoiceChannel = (name: string) => g.newChannel(owner, server.id, name, 'voice');
const newMember = () => g.newMemberOf(server.id);

const join = (userId: string, channelId: string) => g.call(userId, 'POST', '/v1/voice/join', { channelId });
const leave = (userId: string) => g.call(userId, 'POST', '/v1/voice/leave');
const temporaryOf = async (userId: string): Promise<string> => {
  const res = await join(userId, jtc.id);
  expect(res.status).toBe(200);
  return res.body.channel.id;
};
const channelExists = async (id: string) => (await g.db.query('SELECT 1 FROM channels WHERE id = $1', [id])).rowCount === 1;
const statesIn = async (channelId: string) =>
  (await g.db.query('SELECT user_id FROM voice_states WHERE channel_id = $1', [channelId])).rows.map((r) => r.user_id);

/** The events about a channel, in the order the outbox relays them. */
async function eventsAbout(channelId: string): Promise<{ subject: string; data: Row }[]> {
  const { rows } = await g.db.query(
    `SELECT subject, payload->'data' AS data FROM outbox
     WHERE payload->'data'->>'channelId' = $1 OR payload->'data'->>'id' = $1 OR payload->'data'->>'fromChannelId' = $1
     ORDER BY seq`,
    [channelId],
  );
  return rows;
}

/** The channel's guilds.channel.deleted (exactly one), and the events written before it. */
async function deletion(channelId: string) {
  const events = await eventsAbout(channelId);
  const at = events.findIndex((e) => e.subject === 'guilds.channel.deleted');
  expect(at, JSON.stringify(events)).toBeGreaterThanOrEqual(0);
  expect(events.filter((e) => e.subject === 'guilds.channel.deleted')).toHaveLength(1);
  return { deleted: events[at]!.data as { viewerIds: string[] }, before: events.slice(0, at), after: events.slice(at + 1) };
}

describe('a voice channel deleted with people in it', () => {
  it('ends each state first (left "removed", with who viewed the channel), then the channel, leaving no state', async () => {
    const room = await newVoiceChannel('doomed');
    for (const u of [alice, bob]) expect((await join(u, room.id)).status).toBe(200);
    expect((await g.call(owner, 'DELETE', `/v1/channels/${room.id}`)).status).toBe(204);

    expect(await statesIn(room.id)).toEqual([]);
    const { deleted, before } = await deletion(room.id);
    expect(deleted.viewerIds).toEqual(expect.arrayContaining([owner, alice, bob, watcher]));
    const left = before.filter((e) => e.subject === 'guilds.voice.left').map((e) => e.data);
    expect(left).toHaveLength(2);
    for (const u of [alice, bob]) {
      expect(left).toContainEqual({
        userId: u,
        serverId: server.id,
        channelId: room.id,
        reason: 'removed',
        viewerIds: deleted.viewerIds,
        channelEmptied: true,
      });
    }
    expect((await g.call(alice, 'POST', '/v1/voice/grant')).status).toBe(404);
  });

  it('tells a state not yet swept that it expired, and deletes a text channel as before', async () => {
    const room = await newVoiceChannel('doomed-expired');
    expect((await join(alice, room.id)).status).toBe(200);
    await g.db.query("UPDATE voice_states SET expires_at = now() - interval '1 second' WHERE user_id = $1", [alice]);
    expect((await g.call(owner, 'DELETE', `/v1/channels/${room.id}`)).status).toBe(204);
    const { before } = await deletion(room.id);
    expect(before.filter((e) => e.subject === 'guilds.voice.left').map((e) => e.data.reason)).toEqual(['expired']);

    const text = (await g.call(owner, 'POST', `/v1/servers/${server.id}/channels`, { name: 'plain', channelType: 'text' })).body;
    expect((await g.call(owner, 'DELETE', `/v1/channels/${text.id}`)).status).toBe(204);
    expect((await eventsAbout(text.id)).map((e) => e.subject)).toEqual(['guilds.channel.created', 'guilds.channel.deleted']);
  });

  it('ends with an event every join that lands before a racing deletion; the others find it gone (404)', async () => {
    const crowd = await Promise.all(Array.from({ length: 5 }, newMember));
    for (let round = 0; round < 3; round++) {
      const room = await newVoiceChannel(`race-${round}`);
      const [deleted, ...joins] = await Promise.all([
        g.call(owner, 'DELETE', `/v1/channels/${room.id}`),
        ...crowd.map((u) => join(u, room.id)),
      ]);
      expect(deleted.status).toBe(204);
      expect(joins.map((r) => r.status).filter((s) => s !== 200 && s !== 404)).toEqual([]);
      expect(await statesIn(room.id)).toEqual([]);
      const landed = crowd.filter((_, i) => joins[i]!.status === 200).sort();
      const { before } = await deletion(room.id);
      const ended = before.filter((e) => e.subject === 'guilds.voice.left').map((e) => e.data.userId as string);
      expect(ended.sort()).toEqual(landed);
      await Promise.all(crowd.map(leave));
    }
  });
});

describe('a temporary channel emptied by the last state in it', () => {
  const endings: [string, VoiceEnding][] = [
    ['leaving', { reason: 'left', end: (u) => leave(u) }],
    ['switching', { reason: 'switched', end: (u) => join(u, lobby.id) }],
    ['a disconnect', { reason: 'disconnected', end: (u) => g.call(owner, 'DELETE', `/v1/servers/${server.id}/voice-states/${u}`) }],
    ['a kick', { reason: 'removed', end: (u) => g.call(owner, 'DELETE', `/v1/servers/${server.id}/members/${u}`) }],
    [
      'expiry (the sweeper)',
      {
        reason: 'expired',
        end: async (u) => {
          await g.db.query("UPDATE voice_states SET expires_at = now() - interval '1 second' WHERE user_id = $1", [u]);
          expect(await sweepVoiceStates({ pool: g.db })).toBe(1);
        },
      },
    ],
  ];

  it.each(endings)('carries who viewed it on the left event of %s, written before CHANNEL_DELETE', async (_, { reason, end }) => {
    const member = await newMember();
    const temp = await temporaryOf(member);
    await end(member);
    expect(await channelExists(temp)).toBe(false);
    const { deleted, before } = await deletion(temp);
    expect(deleted.viewerIds).toEqual(expect.arrayContaining([owner, watcher]));
    expect(before.filter((e) => e.subject === 'guilds.voice.left').map((e) => e.data)).toEqual([
      { userId: member, serverId: server.id, channelId: temp, reason, viewerIds: deleted.viewerIds, channelEmptied: true },
    ]);
    await leave(member);
  });

  it('carries no viewers while others stay in it (the gateway asks who views it then)', async () => {
    const temp = await temporaryOf(alice);
    expect((await join(bob, temp)).status).toBe(200);
    expect((await leave(alice)).status).toBe(204);
    expect(await channelExists(temp)).toBe(true);
    const [stayed] = (await eventsAbout(temp)).filter((e) => e.subject === 'guilds.voice.left').map((e) => e.data);
    expect(stayed).toEqual({ userId: alice, serverId: server.id, channelId: temp, reason: 'left', channelEmptied: false });
    expect((await leave(bob)).status).toBe(204);
    const { deleted, before } = await deletion(temp);
    expect(before.filter((e) => e.subject === 'guilds.voice.left').map((e) => e.data.viewerIds)).toEqual([undefined, deleted.viewerIds]);
  });

  it('carries who viewed it as fromViewerIds on a move out of it, by a moderator or to the AFK channel', async () => {
    const afk = await newVoiceChannel('afk');
    expect((await g.call(owner, 'PATCH', `/v1/servers/${server.id}`, { afkChannelId: afk.id, afkTimeoutSeconds: 60 })).status).toBe(200);
    const moves: [string, (userId: string) => Promise<unknown>][] = [
      ['moderator', (u) => g.call(owner, 'POST', '/v1/voice/move', { userId: u, channelId: lobby.id })],
      ['afk', () => moveIdleMembersToAfk({ pool: g.db }, new Date(Date.now() + 120_000))],
    ];
    for (const [name, move] of moves) {
      const member = await newMember();
      const temp = await temporaryOf(member);
      await move(member);
      expect(await channelExists(temp), name).toBe(false);
      const { deleted, before } = await deletion(temp);
      const moved = before.filter((e) => e.subject === 'guilds.voice.moved').map((e) => e.data);
      expect(moved, name).toEqual([expect.objectContaining({ userId: member, fromChannelId: temp, fromViewerIds: deleted.viewerIds })]);
      await leave(member);
    }
    expect((await g.call(owner, 'PATCH', `/v1/servers/${server.id}`, { afkChannelId: null })).status).toBe(200);
  });
});

type VoiceEnding = { reason: string; end: (userId: string) => Promise<unknown> };

describe("temporary channels as the server's channels", () => {
  it('refuses a temporary channel as AFK or join-to-create channel (400), changing nothing', async () => {
    const temp = await temporaryOf(alice);
    const before = (await g.call(owner, 'GET', `/v1/servers/${server.id}`)).body;
    for (const body of [{ afkChannelId: temp }, { jtcChannelId: temp }]) {
      const res = await g.call(owner, 'PATCH', `/v1/servers/${server.id}`, { name: 'renamed', ...body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body).toEqual({ error: expect.stringContaining('temporary channel') });
    }
    expect((await g.call(owner, 'GET', `/v1/servers/${server.id}`)).body).toEqual(before);
    await leave(alice);
  });

  it('tells the members (guilds.server.updated) when a temporary channel set as the AFK channel before goes', async () => {
    const temp = await temporaryOf(alice);
    // Stored before temporary channels were refused: the foreign key clears it as the channel goes.
    await g.db.query('UPDATE servers SET afk_channel_id = $2 WHERE id = $1', [server.id, temp]);
    const count = (await g.outbox('guilds.server.updated')).length;
    expect((await leave(alice)).status).toBe(204);
    expect(await channelExists(temp)).toBe(false);
    expect((await g.call(owner, 'GET', `/v1/servers/${server.id}`)).body.afkChannelId).toBeNull();
    const updates = (await g.outbox('guilds.server.updated')).slice(count).map((e) => e.data);
    expect(updates).toEqual([expect.objectContaining({ id: server.id, afkChannelId: null, jtcChannelId: jtc.id })]);
  });
});

describe('a locked join-to-create channel', () => {
  it('admits only its owner and those who may move members: 403 for others, and no temporary channel for them', async () => {
    expect((await g.call(owner, 'PATCH', `/v1/channels/${jtc.id}`, { isLocked: true })).status).toBe(200);
    const created = (await g.outbox('guilds.channel.created')).length;
    const refused = await join(alice, jtc.id);
    expect(refused).toMatchObject({ status: 403, body: { error: 'This voice channel is locked' } });
    expect((await g.db.query('SELECT 1 FROM channels WHERE owner_id = $1', [alice])).rowCount).toBe(0);
    expect(await g.db.query('SELECT 1 FROM voice_states WHERE user_id = $1', [alice])).toMatchObject({ rowCount: 0 });
    expect((await g.outbox('guilds.channel.created')).length).toBe(created);

    const mover = await newMember();
    const role = (await g.call(owner, 'POST', `/v1/servers/${server.id}/roles`, { permissions: toMask(Permission.MOVE_MEMBERS) })).body;
    expect((await g.call(owner, 'PUT', `/v1/servers/${server.id}/members/${mover}/roles/${role.id}`)).status).toBe(204);
    for (const u of [owner, mover]) {
      const res = await join(u, jtc.id);
      expect(res.status).toBe(200);
      expect(res.body.channel).toMatchObject({ isTemporary: true, ownerId: u });
      await leave(u);
    }
    expect((await g.call(owner, 'PATCH', `/v1/channels/${jtc.id}`, { isLocked: false })).status).toBe(200);
    expect((await join(alice, jtc.id)).status).toBe(200);
    await leave(alice);
  });
});
