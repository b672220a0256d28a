import type { PlayerState } from '@chat/contracts';
import { until } from '@chat/testkit';
import type { FastifyInstance } from 'fastify';
import { v7 as uuidv7 } from 'uuid';
import { afterAll, describe, expect, it } from 'vitest';
import { startMusicTest } from './harness.ts';

// Two instances on one database stand for two replicas: whatever keeps them consistent must live
// in PostgreSQL, since they share no memory.
const t = await startMusicTest();
const replica = await t.startInstance();
afterAll(async () => {
  await replica.close();
  await t.close();
});

const alice = uuidv7();
const bob = uuidv7();

async function control(app: FastifyInstance, userId: string, action: string, payload: Record<string, unknown>) {
  return app.inject({ method: 'POST', url: `/v1/music/${action}`, headers: await t.auth(userId), payload });
}

async function channelPlaying(urls: string[]) {
  const channel = t.guilds.voiceChannelWith([alice, bob]);
  const target = { channelId: channel.id, serverId: channel.serverId };
  let state: PlayerState | undefined;
  for (const url of urls) state = (await control(t.app, alice, 'play', { ...target, url })).json();
  return { channel, target, state: state as PlayerState };
}

async function dbTracks(channelId: string) {
  return (await t.runtime.pool.query('SELECT id, url FROM tracks WHERE channel_id = $1 ORDER BY seq', [channelId])).rows;
}

/** Runs `requests` while a transaction of the test holds the player row, released once `waiters` wait for it. */
async function whileRowLocked<T>(channelId: string, waiters: number, requests: () => Promise<T>): Promise<T> {
  const holder = await t.runtime.pool.connect();
  try {
    await holder.query('BEGIN');
    await holder.query('SELECT 1 FROM players WHERE channel_id = $1 FOR UPDATE', [channelId]);
    const pending = requests();
    await until(async () => {
      // Asked outside the holding transaction: inside it, pg_stat_activity is a frozen snapshot.
      const { rows } = await t.runtime.pool.query(
        "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
      );
      return rows[0].n >= waiters;
    });
    await holder.query('COMMIT');
    return await pending;
  } finally {
    holder.release();
  }
}

describe('consistency under concurrency, across replicas', () => {
  it('two concurrent skips of the same track: one 200 {}, one 409, one track skipped', async () => {
    for (let round = 0; round < 5; round++) {
      const { channel, target } = await channelPlaying([
        'https://example.com/a.mp3',
        'https://example.com/b.mp3',
        'https://example.com/c.mp3',
      ]);
      const skip = { ...target, url: 'https://example.com/a.mp3' };
      const answers = await Promise.all([control(t.app, alice, 'skip', skip), control(replica.app, bob, 'skip', skip)]);

      const byStatus = answers.map((res) => ({ status: res.statusCode, body: res.json() })).sort((x, y) => x.status - y.status);
      expect(byStatus).toEqual([
        { status: 200, body: {} },
        { status: 409, body: { error: 'That track is no longer playing' } },
      ]);
      expect((await dbTracks(channel.id)).map((r) => r.url)).toEqual(['https://example.com/b.mp3', 'https://example.com/c.mp3']);
      const skips = (await t.playerEvents()).filter((e) => e.player.channelId === channel.id && e.action === 'skip');
      expect(skips).toHaveLength(1);
    }
  });

  it('with the same url queued twice, trackId makes concurrent skips skip only the first', async () => {
    const { channel, target, state } = await channelPlaying(['https://example.com/x.mp3', 'https://example.com/x.mp3']);
    const skip = { ...target, url: 'https://example.com/x.mp3', trackId: state.current?.id };
    const answers = await Promise.all([control(t.app, alice, 'skip', skip), control(replica.app, bob, 'skip', skip)]);

    expect(answers.map((res) => res.statusCode).sort()).toEqual([200, 409]);
    expect((await dbTracks(channel.id)).map((r) => r.id)).toEqual([state.queue[0]?.id]);
  });

  it('concurrent plays on an idle player: every track queued once, exactly one started', async () => {
    const channel = t.guilds.voiceChannelWith([alice, bob]);
    const target = { channelId: channel.id, serverId: channel.serverId };
    expect((await control(t.app, alice, 'volume', { ...target, volume: 80 })).statusCode).toBe(200);
    const urls = Array.from({ length: 10 }, (_, i) => `https://example.com/${i}.mp3`);

    // Hold the player's row so that every play reaches it while the player is still idle; then
    // let them go together. Only the row lock can then decide which one starts.
    const answers = await whileRowLocked(channel.id, urls.length, () =>
      Promise.all(urls.map((url, i) => control(i % 2 ? replica.app : t.app, i % 2 ? bob : alice, 'play', { ...target, url }))),
    );

    expect(answers.map((res) => res.statusCode)).toEqual(urls.map(() => 200));
    expect((await dbTracks(channel.id)).map((r) => r.url).sort()).toEqual([...urls].sort());
    const plays = (await t.playerEvents()).filter((e) => e.player.channelId === channel.id && e.action === 'play');
    // One change per play, each in lock order: versions 2..11 (1 was the volume) without gaps or repeats.
    expect(plays.map((e) => e.player.version)).toEqual(urls.map((_, i) => i + 2));
    // The first play started a track; no later play restarted or replaced it.
    const first = plays[0]?.player.current;
    expect(first).not.toBeNull();
    for (const event of plays) {
      expect(event.player.current?.id).toBe(first?.id);
      expect(event.player.current?.startedAt).toBe(first?.startedAt);
    }
    expect(plays.at(-1)?.player.queue).toHaveLength(urls.length - 1);
  });

  it('concurrent pause and resume leave a consistent player (paused iff a position is frozen)', async () => {
    const { channel, target } = await channelPlaying(['https://example.com/a.mp3']);
    await Promise.all(
      Array.from({ length: 10 }, (_, i) => control(i % 2 ? replica.app : t.app, alice, i % 2 ? 'resume' : 'pause', target)),
    );
    const { rows } = await t.runtime.pool.query('SELECT started_at, paused_position_ms, version FROM players WHERE channel_id = $1', [
      channel.id,
    ]);
    const events = (await t.playerEvents()).filter((e) => e.player.channelId === channel.id);
    expect(rows[0].started_at).not.toBeNull();
    expect(Number(rows[0].version)).toBe(events.length);
    // Each event flips the state: the pause/resume history alternates, starting with a pause.
    expect(events.slice(1).map((e) => e.action)).toEqual(events.slice(1).map((_, i) => (i % 2 ? 'resume' : 'pause')));
    expect(rows[0].paused_position_ms !== null).toBe(events.at(-1)?.action === 'pause');
  });
});
