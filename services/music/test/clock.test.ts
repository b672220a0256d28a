import type { PlayerState } from '@chat/contracts';
import { createPool } from '@chat/kit';
import { countRoundTrips } from '@chat/testkit';
import { v7 as uuidv7 } from 'uuid';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { advanceDuePlayers, startPlayerClock } from '../src/domain/clock.ts';
import { startMusicTest } from './harness.ts';

// The clock takes `now` as an argument: every test below says what time it is, none sleeps.

const t = await startMusicTest();
afterAll(() => t.close());

const alice = uuidv7();
const clockDeps = { pool: t.runtime.pool, bus: t.runtime.bus };
const at = (iso: string, plusMs: number) => new Date(Date.parse(iso) + plusMs);

async function send(userId: string, method: 'POST' | 'PATCH' | 'DELETE' | 'GET', url: string, payload?: Record<string, unknown>) {
  return t.app.inject({ method, url, headers: await t.auth(userId), ...(payload ? { payload } : {}) });
}

async function state(channelId: string): Promise<PlayerState> {
  return (await send(alice, 'GET', `/v1/music/${channelId}`)).json();
}

/** A voice channel with alice in it, and tracks (url, seconds) played in order; the first starts. */
async function playing(...tracks: [string, number | undefined][]) {
  const channel = t.guilds.voiceChannelWith([alice]);
  const target = { channelId: channel.id, serverId: channel.serverId };
  for (const [name, seconds] of tracks) {
    const res = await send(alice, 'POST', '/v1/music/play', {
      ...target,
      url: `https://example.com/${name}.mp3`,
      durationSeconds: seconds,
    });
    expect(res.statusCode).toBe(200);
  }
  const start = (await state(channel.id)).current?.startedAt as string;
  return { channel, target, start };
}

/** How many times the clock ended a track of this channel, from the events on the stream. */
const ends = async (channelId: string) =>
  (await t.playerEvents()).filter((e) => e.player.channelId === channelId && e.action === 'ended').length;

const names = (s: PlayerState) =>
  [s.current?.url, ...s.queue.map((q) => q.url)].map((u) => u?.replace(/^https:\/\/example\.com\/|\.mp3$/g, ''));

describe('the player clock', () => {
  it('ends a track of known length by itself and starts the next exactly when it ended', async () => {
    const { channel, start } = await playing(['a', 60], ['b', 30]);
    expect((await state(channel.id)).current?.durationMs).toBe(60_000);
    await advanceDuePlayers(clockDeps, at(start, 59_000));
    expect(names(await state(channel.id))).toEqual(['a', 'b']);

    await advanceDuePlayers(clockDeps, at(start, 61_000));
    expect(await ends(channel.id)).toBe(1);
    const after = await state(channel.id);
    expect(names(after)).toEqual(['b']);
    expect(Date.parse(after.current?.startedAt as string)).toBe(Date.parse(start) + 60_000);
    const events = (await t.playerEvents()).filter((e) => e.player.channelId === channel.id);
    expect(events.at(-1)).toMatchObject({ action: 'ended', actorId: alice, player: { version: after.version } });
  });

  it('asks one statement, and opens no transaction, in a round with nothing due', async () => {
    await playing(['quiet', 60]);
    const { result, statements } = await countRoundTrips(() => advanceDuePlayers(clockDeps, new Date(0)));
    expect(result).toBe(0);
    expect(statements).toHaveLength(1);
  });

  it('catches up after a pause in the clock (a restart): every ended track once, none skipped', async () => {
    const { channel, start } = await playing(['a', 10], ['b', 10], ['c', 10]);
    await advanceDuePlayers(clockDeps, at(start, 25_000));
    const after = await state(channel.id);
    expect(names(after)).toEqual(['c']);
    expect(Date.parse(after.current?.startedAt as string)).toBe(Date.parse(start) + 20_000);
    expect(await ends(channel.id)).toBe(2);
    await advanceDuePlayers(clockDeps, at(start, 25_000));
    expect(await ends(channel.id)).toBe(2);
    await advanceDuePlayers(clockDeps, at(start, 31_000));
    expect(await ends(channel.id)).toBe(3);
    expect((await state(channel.id)).current).toBeNull();
  });

  it('never ends a track of unknown length, nor a paused one', async () => {
    const unknown = await playing(['a', undefined], ['b', 10]);
    const paused = await playing(['p', 10], ['q', 10]);
    expect((await send(alice, 'POST', '/v1/music/pause', paused.target)).statusCode).toBe(200);
    await advanceDuePlayers(clockDeps, at(unknown.start, 3_600_000));
    expect(names(await state(unknown.channel.id))).toEqual(['a', 'b']);
    expect(names(await state(paused.channel.id))).toEqual(['p', 'q']);
    expect(await ends(unknown.channel.id)).toBe(0);
    expect(await ends(paused.channel.id)).toBe(0);
    // Resumed, the paused track ends 10 s after it started, counting from the resume.
    const resumed = (await send(alice, 'POST', '/v1/music/resume', paused.target)).json() as PlayerState;
    await advanceDuePlayers(clockDeps, at(resumed.current?.startedAt as string, 10_500));
    expect(names(await state(paused.channel.id))).toEqual(['q']);
  });

  it('replays the track in track loop, and puts finished tracks back at the end in queue loop', async () => {
    const one = await playing(['a', 10], ['b', 10]);
    expect((await send(alice, 'PATCH', `/v1/music/${one.channel.id}`, { loop: 'track' })).json()).toMatchObject({
      loop: 'track',
      shuffle: false,
    });
    await advanceDuePlayers(clockDeps, at(one.start, 25_000));
    expect(names(await state(one.channel.id))).toEqual(['a', 'b']);
    expect(await ends(one.channel.id)).toBe(2);

    const all = await playing(['a', 10], ['b', 10]);
    await send(alice, 'PATCH', `/v1/music/${all.channel.id}`, { loop: 'queue' });
    await advanceDuePlayers(clockDeps, at(all.start, 15_000));
    expect(names(await state(all.channel.id))).toEqual(['b', 'a']);
    await advanceDuePlayers(clockDeps, at(all.start, 25_000));
    expect(names(await state(all.channel.id))).toEqual(['a', 'b']);
    expect(await ends(all.channel.id)).toBe(2);
  });

  it('picks the next track among the queue in shuffle, losing none', async () => {
    const { channel, start } = await playing(['a', 10], ['b', 10], ['c', 10], ['d', 10]);
    await send(alice, 'PATCH', `/v1/music/${channel.id}`, { shuffle: true });
    await advanceDuePlayers(clockDeps, at(start, 11_000));
    const after = names(await state(channel.id));
    expect(after).toHaveLength(3);
    expect([...after].sort()).toEqual(['b', 'c', 'd']);
  });

  it('advances once when two replicas run the clock at the same moment', async () => {
    const { channel, start } = await playing(['a', 10], ['b', 10], ['c', 10]);
    const other = createPool(t.runtime.databaseUrl, 2);
    try {
      const now = at(start, 11_000);
      await Promise.all([advanceDuePlayers(clockDeps, now), advanceDuePlayers({ pool: other, bus: t.runtime.bus }, now)]);
      expect(names(await state(channel.id))).toEqual(['b', 'c']);
      expect(await ends(channel.id)).toBe(1);
    } finally {
      await other.end();
    }
  });

  it('advances once when a skip races the clock at the end of a track', async () => {
    for (let round = 0; round < 5; round++) {
      const { channel, target, start } = await playing(['a', 10], ['b', 10], ['c', 10]);
      const [skip] = await Promise.all([
        send(alice, 'POST', '/v1/music/skip', { ...target, url: 'https://example.com/a.mp3' }),
        // 1 ms past a's end: a skip starts b at the real time, which is already later than `start`.
        advanceDuePlayers(clockDeps, at(start, 10_001)),
      ]);
      expect(names(await state(channel.id))).toEqual(['b', 'c']);
      // Either the skip won (200, the clock found b not yet ended) or the clock did (the skip is stale: 409).
      expect(skip.statusCode === 200 ? 0 : 1).toBe(await ends(channel.id));
      expect([200, 409]).toContain(skip.statusCode);
    }
  });
});

describe('the queue made explicit', () => {
  it('adds without starting: POST /v1/music/queue answers 201 and the player stays idle', async () => {
    const channel = t.guilds.voiceChannelWith([alice]);
    const res = await send(alice, 'POST', '/v1/music/queue', {
      channelId: channel.id,
      serverId: channel.serverId,
      url: 'https://example.com/q.mp3',
      title: 'Queued',
      durationSeconds: 120,
    });
    expect(res.statusCode).toBe(201);
    expect(res.json()).toMatchObject({ current: null, queue: [{ title: 'Queued', durationMs: 120_000, id: expect.any(String) }] });
  });

  it('removes an upcoming track (204), refuses the current one (409) and an unknown one (404)', async () => {
    const { channel } = await playing(['a', 10], ['b', 10], ['c', 10]);
    const before = await state(channel.id);
    const b = before.queue[0]?.id as string;
    expect((await send(alice, 'DELETE', `/v1/music/${channel.id}/queue/${b}`)).statusCode).toBe(204);
    expect(names(await state(channel.id))).toEqual(['a', 'c']);
    const current = await send(alice, 'DELETE', `/v1/music/${channel.id}/queue/${before.current?.id}`);
    expect(current.statusCode).toBe(409);
    expect(current.json()).toEqual({ error: 'That track is playing: skip it' });
    expect((await send(alice, 'DELETE', `/v1/music/${channel.id}/queue/${uuidv7()}`)).statusCode).toBe(404);
    expect(names(await state(channel.id))).toEqual(['a', 'c']);
  });

  it('sets loop and shuffle with PATCH, refusing an empty body or an unknown mode', async () => {
    const { channel } = await playing(['a', 10]);
    const res = await send(alice, 'PATCH', `/v1/music/${channel.id}`, { loop: 'queue', shuffle: true });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ loop: 'queue', shuffle: true });
    expect((await send(alice, 'PATCH', `/v1/music/${channel.id}`, {})).statusCode).toBe(400);
    expect((await send(alice, 'PATCH', `/v1/music/${channel.id}`, { loop: 'forever' })).statusCode).toBe(400);
    expect(await state(channel.id)).toMatchObject({ loop: 'queue', shuffle: true });
  });

  it('lets only members in the voice channel change the queue', async () => {
    const { channel } = await playing(['a', 10], ['b', 10]);
    const outsider = uuidv7();
    t.guilds.setUser(channel.id, outsider, { inChannel: false });
    const b = (await state(channel.id)).queue[0]?.id as string;
    expect((await send(outsider, 'DELETE', `/v1/music/${channel.id}/queue/${b}`)).statusCode).toBe(403);
    expect((await send(outsider, 'PATCH', `/v1/music/${channel.id}`, { loop: 'track' })).statusCode).toBe(403);
    expect(names(await state(channel.id))).toEqual(['a', 'b']);
  });
});

describe('the running clock', () => {
  it('rounds every interval at the time its deps say: fake timers drive the interval, the test clock the time', async () => {
    t.clock.set();
    const { channel } = await playing(['a', 60], ['b', 30]);
    // Only the interval is faked: PostgreSQL and NATS keep their real timers.
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    try {
      const clock = startPlayerClock({ ...clockDeps, now: t.clock.now }, 250);
      t.clock.advance(59_000);
      await vi.advanceTimersByTimeAsync(250);
      t.clock.advance(2_000);
      expect(names(await state(channel.id))).toEqual(['a', 'b']);
      await vi.advanceTimersByTimeAsync(250);
      await clock.stop();
    } finally {
      vi.useRealTimers();
      t.clock.release();
    }
    expect(names(await state(channel.id))).toEqual(['b']);
    expect(await ends(channel.id)).toBe(1);
  });
});
