import { type PlayerState, VOICE_SUBJECTS } from '@chat/contracts';
import type { ConsumerHandle } from '@chat/kit';
import { liveVoiceState, until } from '@chat/testkit';
import { v7 as uuidv7 } from 'uuid';
import { afterAll, describe, expect, it } from 'vitest';
import { consumeEmptiedVoiceChannels } from '../src/bus/guilds.ts';
import { advanceDuePlayers } from '../src/domain/clock.ts';
import { startMusicTest } from './harness.ts';

// Guilds says on guilds.voice.left (channelEmptied) and guilds.voice.moved (fromChannelEmptied)
// that a state's end left its channel with nobody connected; published here as guilds' relay would.

const t = await startMusicTest();
const deps = { ...t.runtime, now: t.clock.now };
let consumers: ConsumerHandle[] = await consumeEmptiedVoiceChannels(deps);
afterAll(async () => {
  await Promise.all(consumers.map((c) => c.stop()));
  await t.close();
});

const alice = uuidv7();
const clockDeps = { pool: t.runtime.pool, bus: t.runtime.bus };

async function send(method: 'POST' | 'PATCH' | 'GET', url: string, payload?: Record<string, unknown>) {
  return t.app.inject({ method, url, headers: await t.auth(alice), ...(payload ? { payload } : {}) });
}

const state = async (channelId: string): Promise<PlayerState> => (await send('GET', `/v1/music/${channelId}`)).json();

/** A voice channel with alice in it, whose one-second track plays in track loop (the probe's player). */
async function loopingPlayer() {
  const channel = t.guilds.voiceChannelWith([alice]);
  const target = { channelId: channel.id, serverId: channel.serverId };
  const play = await send('POST', '/v1/music/play', { ...target, url: 'https://example.com/loop.mp3', durationSeconds: 1 });
  expect(play.statusCode).toBe(200);
  expect((await send('PATCH', `/v1/music/${channel.id}`, { loop: 'track' })).statusCode).toBe(200);
  return { channel, target };
}

const publish = t.publishGuildsEvent;
const applied = t.applied;

/** A guilds.voice.left of alice from the channel. */
const leftEvent = (channel: { id: string; serverId: string }, fields: Record<string, unknown>) => ({
  userId: alice,
  serverId: channel.serverId,
  channelId: channel.id,
  reason: 'left',
  ...fields,
});

/** A guilds.voice.moved of alice out of the channel into another one. */
const movedEvent = (channel: { id: string; serverId: string }, fields: Record<string, unknown>) => ({
  ...liveVoiceState(alice, channel.serverId, uuidv7()),
  fromChannelId: channel.id,
  movedBy: null,
  ...fields,
});

const eventsOf = async (channelId: string) => (await t.playerEvents()).filter((e) => e.player.channelId === channelId);

/**
 * Publishes an event that is not applied (acked without a record), then one of the same subject (the
 * same durable) that is, about a channel without a player, and waits for that one: a durable reads
 * in order, so the first was dealt with by then.
 */
async function publishAndSettle(subject: string, data: unknown): Promise<void> {
  await publish(subject, data);
  const elsewhere = t.guilds.voiceChannelWith([alice]);
  const marker =
    subject === VOICE_SUBJECTS.left ? leftEvent(elsewhere, { channelEmptied: true }) : movedEvent(elsewhere, { fromChannelEmptied: true });
  const markerId = await publish(subject, marker);
  await until(() => applied(markerId), { what: 'the marker event is applied' });
}

describe('a player whose voice channel nobody is connected to any more', () => {
  it.each(['left', 'switched', 'disconnected', 'removed', 'expired'])(
    'pauses when the last listener’s state ends (%s), once, keeping track and position; the clock no longer advances it',
    async (reason) => {
      const { channel } = await loopingPlayer();
      const before = await state(channel.id);
      const at = t.clock.set(new Date(Date.parse(before.current?.startedAt as string) + 400));
      const eventId = await publish(VOICE_SUBJECTS.left, leftEvent(channel, { reason, channelEmptied: true }));
      await until(() => applied(eventId), { what: 'the emptied channel is applied' });

      const paused = await state(channel.id);
      expect(paused).toMatchObject({ paused: true, version: before.version + 1, loop: 'track', queue: [] });
      expect(paused.current).toMatchObject({ url: 'https://example.com/loop.mp3', positionMs: 400 });
      expect((await eventsOf(channel.id)).at(-1)).toMatchObject({ action: 'pause', actorId: alice, player: paused });

      // Long after the track would have ended: nothing moves, no event.
      const events = (await eventsOf(channel.id)).length;
      await advanceDuePlayers(clockDeps, new Date(at.getTime() + 60_000));
      expect((await state(channel.id)).version).toBe(paused.version);
      expect(await eventsOf(channel.id)).toHaveLength(events);
      t.clock.release();
    },
  );

  it('pauses when the last listener is moved out of it (fromChannelEmptied)', async () => {
    const { channel } = await loopingPlayer();
    const before = await state(channel.id);
    const eventId = await publish(VOICE_SUBJECTS.moved, movedEvent(channel, { fromChannelEmptied: true }));
    await until(() => applied(eventId), { what: 'the move is applied' });
    expect(await state(channel.id)).toMatchObject({ paused: true, version: before.version + 1 });
    expect((await eventsOf(channel.id)).at(-1)).toMatchObject({ action: 'pause', actorId: alice });
  });

  it('lets someone who joins again resume where it was paused', async () => {
    const { channel, target } = await loopingPlayer();
    const start = Date.parse((await state(channel.id)).current?.startedAt as string);
    t.clock.set(new Date(start + 700));
    const eventId = await publish(VOICE_SUBJECTS.left, leftEvent(channel, { channelEmptied: true }));
    await until(() => applied(eventId), { what: 'the emptied channel is applied' });
    t.clock.advance(30_000);
    const resumed = await send('POST', '/v1/music/resume', target);
    expect(resumed.statusCode).toBe(200);
    expect(resumed.json()).toMatchObject({ paused: false, current: { positionMs: 700 } });
    t.clock.release();
  });

  it('pauses a track that ended before the clock came to it at its end, not past it', async () => {
    const { channel } = await loopingPlayer();
    const start = Date.parse((await state(channel.id)).current?.startedAt as string);
    t.clock.set(new Date(start + 1_600));
    const eventId = await publish(VOICE_SUBJECTS.left, leftEvent(channel, { channelEmptied: true }));
    await until(() => applied(eventId), { what: 'the emptied channel is applied' });
    expect(await state(channel.id)).toMatchObject({ paused: true, current: { positionMs: 1_000 } });
    t.clock.release();
  });

  it('leaves the player alone while someone stays, and for an event that does not say (an older guilds)', async () => {
    const { channel } = await loopingPlayer();
    const before = await state(channel.id);
    await publishAndSettle(VOICE_SUBJECTS.left, leftEvent(channel, { channelEmptied: false }));
    await publishAndSettle(VOICE_SUBJECTS.left, leftEvent(channel, {}));
    await publishAndSettle(VOICE_SUBJECTS.moved, movedEvent(channel, { fromChannelEmptied: false }));
    expect(await state(channel.id)).toMatchObject({ paused: false, version: before.version });
  });

  it('changes nothing, with no event, for a paused or idle player, and creates none for a channel without one', async () => {
    const { channel, target } = await loopingPlayer();
    expect((await send('POST', '/v1/music/pause', target)).statusCode).toBe(200);
    const idle = t.guilds.voiceChannelWith([alice]);
    const queued = await send('POST', '/v1/music/queue', { channelId: idle.id, serverId: idle.serverId, url: 'https://example.com/q.mp3' });
    expect(queued.statusCode).toBe(201);
    const none = t.guilds.voiceChannelWith([alice]);
    const versions = [(await state(channel.id)).version, (await state(idle.id)).version];

    for (const c of [channel, idle, none]) {
      const eventId = await publish(VOICE_SUBJECTS.left, leftEvent(c, { channelEmptied: true }));
      await until(() => applied(eventId), { what: 'the emptied channel is applied' });
    }
    expect([(await state(channel.id)).version, (await state(idle.id)).version]).toEqual(versions);
    expect((await state(idle.id)).queue).toHaveLength(1);
    expect((await t.runtime.pool.query('SELECT 1 FROM players WHERE channel_id = $1', [none.id])).rowCount).toBe(0);
    expect(await eventsOf(none.id)).toEqual([]);
  });

  it('applies an emptiness published while music was down once it is back (durable consumers)', async () => {
    const { channel } = await loopingPlayer();
    await Promise.all(consumers.map((c) => c.stop()));
    const eventId = await publish(VOICE_SUBJECTS.left, leftEvent(channel, { channelEmptied: true }));
    expect((await state(channel.id)).paused).toBe(false);
    consumers = await consumeEmptiedVoiceChannels(deps);
    await until(() => applied(eventId), { what: 'the emptied channel is applied after the restart' });
    expect((await state(channel.id)).paused).toBe(true);
  });
});
