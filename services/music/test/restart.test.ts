import type { PlayerState } from '@chat/contracts';
import type { FastifyInstance } from 'fastify';
import { v7 as uuidv7 } from 'uuid';
import { afterAll, describe, expect, it } from 'vitest';
import { type MusicInstance, startMusicTest } from './harness.ts';

// A restart: each instance has its own pool, NATS connection and relay on the same database; the
// first is closed before the second is built, so nothing but PostgreSQL carries the state over.
const t = await startMusicTest();
const open: MusicInstance[] = [];
afterAll(async () => {
  await Promise.all(open.map((instance) => instance.close()));
  await t.close();
});

const dj = uuidv7();
const channel = t.guilds.voiceChannelWith([dj]);
const target = { channelId: channel.id, serverId: channel.serverId };

async function start(): Promise<FastifyInstance> {
  const instance = await t.startInstance();
  open.push(instance);
  return instance.app;
}

async function restart(): Promise<FastifyInstance> {
  await open.pop()?.close();
  return start();
}

async function control(app: FastifyInstance, action: string, payload: Record<string, unknown> = {}) {
  const res = await app.inject({
    method: 'POST',
    url: `/v1/music/${action}`,
    headers: await t.auth(dj),
    payload: { ...target, ...payload },
  });
  expect(res.statusCode).toBe(200);
  return res.json();
}

async function state(app: FastifyInstance): Promise<PlayerState> {
  const res = await app.inject({ method: 'GET', url: `/v1/music/${channel.id}`, headers: await t.auth(dj) });
  expect(res.statusCode).toBe(200);
  return res.json();
}

describe('the player survives a restart of the music service', () => {
  it('keeps the queue, the current track’s start, the paused position and the volume', async () => {
    // The player's clock stands still unless the test moves it: the restart takes no time.
    t.clock.set();
    let app = await start();
    for (const url of ['https://example.com/1.mp3', 'https://example.com/2.mp3', 'https://example.com/3.mp3']) {
      await control(app, 'play', { url });
    }
    await control(app, 'skip', { url: 'https://example.com/1.mp3' });
    await control(app, 'volume', { volume: 150 });
    const playing = await state(app);

    // Restart while playing: same track, same start time, and the position kept running.
    app = await restart();
    expect(await state(app)).toEqual(playing);
    expect(playing.current?.url).toBe('https://example.com/2.mp3');
    expect(playing.queue.map((track) => track.url)).toEqual(['https://example.com/3.mp3']);
    expect(playing.volume).toBe(150);
    t.clock.advance(2_000);
    expect((await state(app)).current?.positionMs).toBe((playing.current?.positionMs ?? Number.NaN) + 2_000);

    // Restart while paused: the frozen position comes back exactly, however long the restart took.
    const paused: PlayerState = await control(app, 'pause');
    app = await restart();
    t.clock.advance(60_000);
    expect(await state(app)).toEqual(paused);

    // And the restarted service carries on from there.
    const resumed: PlayerState = await control(app, 'resume');
    expect(resumed.current?.positionMs).toBe(paused.current?.positionMs);
    expect(Date.parse(resumed.current?.startedAt ?? '') - Date.parse(paused.current?.startedAt ?? '')).toBe(60_000);
    expect(await control(app, 'skip', { url: 'https://example.com/2.mp3' })).toEqual({});
    const last = await state(app);
    expect(last).toMatchObject({ current: { url: 'https://example.com/3.mp3' }, queue: [], volume: 150, paused: false });
    expect(last.version).toBe(paused.version + 2);
  });
});
