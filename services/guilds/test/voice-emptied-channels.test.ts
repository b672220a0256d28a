import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { moveIdleMembersToAfk, sweepVoiceStates } from '../src/domain/voice.ts';
import { startGuilds } from './harness.ts';

/**
 * Whether a voice state's end left its channel with nobody connected: `channelEmptied` on
 * guilds.voice.left, `fromChannelEmptied` on guilds.voice.moved. Music pauses the channel's player
 * on it, so it must be said exactly by the end after which nobody is live in the channel, also when
 * the last two leave at once or someone joins as the last one leaves.
 */

const g = await startGuilds();
afterAll(() => g.close());

type Row = Record<string, unknown>;
let owner: string;
let server: { id: string };

beforeAll(async () => {
  owner = await g.knownUser('owner');
  server = (await g.call(owner, 'POST', '/v1/servers', { name: 'Emptied', isPublic: true })).body;
});

const newVoiceChannel = (name: string) => g.newChannel(owner, server.id, name, 'voice');
const newMember = () => g.newMemberOf(server.id);

const join = async (userId: string, channelId: string) => expect((await joinRaw(userId, channelId)).status).toBe(200);
const joinRaw = (userId: string, channelId: string) => g.call(userId, 'POST', '/v1/voice/join', { channelId });
const leave = (userId: string) => g.call(userId, 'POST', '/v1/voice/leave');
const expire = (userId: string) =>
  g.db.query("UPDATE voice_states SET expires_at = now() - interval '1 second' WHERE user_id = $1", [userId]);

/** The voice events about a channel (left from it, moved out of it, joined into it), in the outbox's order. */
async function voiceEventsOf(channelId: string): Promise<{ subject: string; data: Row }[]> {
  const { rows } = await g.db.query(
    `SELECT subject, payload->'data' AS data FROM outbox
     WHERE subject LIKE 'guilds.voice.%' AND (payload->'data'->>'channelId' = $1 OR payload->'data'->>'fromChannelId' = $1)
     ORDER BY seq`,
    [channelId],
  );
  return rows;
}

/** `channelEmptied` of each guilds.voice.left from the channel, in order, by user. */
async function leftEmptied(channelId: string): Promise<[string, unknown][]> {
  return (await voiceEventsOf(channelId))
    .filter((e) => e.subject === 'guilds.voice.left')
    .map((e) => [e.data.userId as string, e.data.channelEmptied]);
}

describe('channelEmptied on guilds.voice.left', () => {
  const endings: [string, (userId: string) => Promise<unknown>][] = [
    ['leaving', (u) => leave(u)],
    ['switching to another channel', async (u) => join(u, (await newVoiceChannel('elsewhere')).id)],
    ['a disconnect', (u) => g.call(owner, 'DELETE', `/v1/servers/${server.id}/voice-states/${u}`)],
    ['a kick', (u) => g.call(owner, 'DELETE', `/v1/servers/${server.id}/members/${u}`)],
    [
      'expiry (the sweeper)',
      async (u) => {
        await expire(u);
        expect(await sweepVoiceStates({ pool: g.db })).toBe(1);
      },
    ],
  ];

  it.each(endings)('is false while someone stays, and true on the end of the last one, for %s', async (_, end) => {
    const room = await newVoiceChannel('room');
    const [first, last] = [await newMember(), await newMember()];
    await join(first, room.id);
    await join(last, room.id);
    await end(first);
    await end(last);
    expect(await leftEmptied(room.id)).toEqual([
      [first, false],
      [last, true],
    ]);
    await Promise.all([leave(first), leave(last)]);
  });

  it('counts an expired state that the sweeper has not ended yet as gone, and says it again when it is swept', async () => {
    const room = await newVoiceChannel('stale');
    const [stale, last] = [await newMember(), await newMember()];
    await join(stale, room.id);
    await join(last, room.id);
    await expire(stale);
    expect((await leave(last)).status).toBe(204);
    expect(await sweepVoiceStates({ pool: g.db })).toBeGreaterThanOrEqual(1);
    expect(await leftEmptied(room.id)).toEqual([
      [last, true],
      [stale, true],
    ]);
  });

  it('is true on every state ended by the deletion of their channel', async () => {
    const room = await newVoiceChannel('doomed');
    const members = [await newMember(), await newMember()];
    for (const u of members) await join(u, room.id);
    expect((await g.call(owner, 'DELETE', `/v1/channels/${room.id}`)).status).toBe(204);
    expect((await leftEmptied(room.id)).map(([, emptied]) => emptied)).toEqual([true, true]);
  });

  it('is said by exactly one of the last two members leaving at once', async () => {
    for (let round = 0; round < 5; round++) {
      const room = await newVoiceChannel(`pair-${round}`);
      const pair = [await newMember(), await newMember()];
      for (const u of pair) await join(u, room.id);
      expect((await Promise.all(pair.map(leave))).map((r) => r.status)).toEqual([204, 204]);
      const said = (await leftEmptied(room.id)).map(([, emptied]) => emptied);
      expect(said.sort(), `round ${round}`).toEqual([false, true]);
    }
  });

  it('is true exactly when a join racing the last leave lands after it (the joiner then finds the channel emptied)', async () => {
    for (let round = 0; round < 5; round++) {
      const room = await newVoiceChannel(`race-${round}`);
      const [leaver, joiner] = [await newMember(), await newMember()];
      await join(leaver, room.id);
      const [left, joined] = await Promise.all([leave(leaver), joinRaw(joiner, room.id)]);
      expect([left.status, joined.status]).toEqual([204, 200]);
      const events = await voiceEventsOf(room.id);
      const leftAt = events.findIndex((e) => e.subject === 'guilds.voice.left');
      const joinedAt = events.findIndex((e) => e.subject === 'guilds.voice.joined' && e.data.userId === joiner);
      expect(events[leftAt]?.data.channelEmptied, `round ${round}: ${JSON.stringify(events)}`).toBe(joinedAt > leftAt);
      await leave(joiner);
    }
  });
});

describe('fromChannelEmptied on guilds.voice.moved', () => {
  it('is false while someone stays in the channel left, and true when the move took its last one, by a moderator or to the AFK channel', async () => {
    const afk = await newVoiceChannel('afk');
    expect((await g.call(owner, 'PATCH', `/v1/servers/${server.id}`, { afkChannelId: afk.id, afkTimeoutSeconds: 60 })).status).toBe(200);
    const elsewhere = await newVoiceChannel('elsewhere');
    const moves: [string, (userId: string) => Promise<unknown>][] = [
      ['moderator', (u) => g.call(owner, 'POST', '/v1/voice/move', { userId: u, channelId: elsewhere.id })],
      [
        'afk',
        (u) => g.db.query("UPDATE voice_states SET last_active_at = now() - interval '10 minutes' WHERE user_id = $1", [u]).then(afkSweep),
      ],
    ];
    for (const [name, move] of moves) {
      const room = await newVoiceChannel(`moved-${name}`);
      const [first, last] = [await newMember(), await newMember()];
      await join(first, room.id);
      await join(last, room.id);
      await move(first);
      await move(last);
      const moved = (await voiceEventsOf(room.id)).filter((e) => e.subject === 'guilds.voice.moved').map((e) => e.data);
      expect(
        moved.map((m) => [m.userId, m.fromChannelId, m.fromChannelEmptied]),
        name,
      ).toEqual([
        [first, room.id, false],
        [last, room.id, true],
      ]);
      await Promise.all([leave(first), leave(last)]);
    }
    expect((await g.call(owner, 'PATCH', `/v1/servers/${server.id}`, { afkChannelId: null })).status).toBe(200);
  });
});

const afkSweep = () => moveIdleMembersToAfk({ pool: g.db });
