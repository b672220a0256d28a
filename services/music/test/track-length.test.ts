import { MediaFileRpc, type PlayerState } from '@chat/contracts';
import { notFound, serveRpc } from '@chat/kit';
import { v7 as uuidv7 } from 'uuid';
import { afterAll, describe, expect, it } from 'vitest';
import { advanceDuePlayers } from '../src/domain/clock.ts';
import { startMusicTest } from './harness.ts';

// Lengths of uploaded files come from media (rpc.media.file.get); this stand-in answers them.

const t = await startMusicTest();
afterAll(() => t.close());

const alice = uuidv7();
const uploaded = new Map<string, number | null>();
serveRpc(t.runtime.bus, t.runtime.log, MediaFileRpc, async ({ id }) => {
  if (!uploaded.has(id)) throw notFound('File');
  return {
    id,
    uploaderId: alice,
    url: `https://chat.example.test/v1/media/${id}/clip.wav`,
    filename: 'clip.wav',
    contentType: 'audio/wav',
    size: 46,
    durationSeconds: uploaded.get(id) ?? null,
  };
});

/** An uploaded file of this length as media read it, and the url a client plays it by. */
function upload(seconds: number | null): string {
  const id = crypto.randomUUID();
  uploaded.set(id, seconds);
  return `https://chat.example.test/v1/media/${id}/clip.wav`;
}

async function send(method: 'POST' | 'PATCH' | 'GET', url: string, payload?: Record<string, unknown>) {
  return t.app.inject({ method, url, headers: await t.auth(alice), ...(payload ? { payload } : {}) });
}

const ends = async (channelId: string) =>
  (await t.playerEvents()).filter((e) => e.player.channelId === channelId && e.action === 'ended').length;

describe('the length of an uploaded track', () => {
  it('counts a file shorter than a second (one WAV sample) as one second long: play answers 200', async () => {
    const channel = t.guilds.voiceChannelWith([alice]);
    const res = await send('POST', '/v1/music/play', { channelId: channel.id, serverId: channel.serverId, url: upload(1 / 8000) });
    expect(res.statusCode).toBe(200);
    expect((res.json() as PlayerState).current?.durationMs).toBe(1_000);
    const { rows } = await t.runtime.pool.query('SELECT duration_ms FROM tracks WHERE channel_id = $1', [channel.id]);
    expect(rows).toEqual([{ duration_ms: 1000 }]);
  });

  it('keeps a length media could not read unknown', async () => {
    const channel = t.guilds.voiceChannelWith([alice]);
    const res = await send('POST', '/v1/music/play', { channelId: channel.id, serverId: channel.serverId, url: upload(null) });
    expect(res.statusCode).toBe(200);
    expect((res.json() as PlayerState).current?.durationMs).toBeNull();
  });

  it('ends a looping 2 ms track at most once per second of clock time', async () => {
    const channel = t.guilds.voiceChannelWith([alice]);
    const played = await send('POST', '/v1/music/play', { channelId: channel.id, serverId: channel.serverId, url: upload(0.002) });
    expect(played.statusCode).toBe(200);
    expect((await send('PATCH', `/v1/music/${channel.id}`, { loop: 'track' })).statusCode).toBe(200);
    const start = Date.parse((played.json() as PlayerState).current?.startedAt as string);
    const clockDeps = { pool: t.runtime.pool, bus: t.runtime.bus };

    await advanceDuePlayers(clockDeps, new Date(start + 999));
    expect(await ends(channel.id)).toBe(0);
    await advanceDuePlayers(clockDeps, new Date(start + 1_999));
    expect(await ends(channel.id)).toBe(1);
    const after = (await send('GET', `/v1/music/${channel.id}`)).json() as PlayerState;
    expect(after.current).toMatchObject({ durationMs: 1_000, startedAt: new Date(start + 1_000).toISOString() });
  });

  // Records media kept before it checked lengths say what a crafted header claimed.
  it.each([
    ['10^13 seconds (milliseconds past 2^53)', 10 ** 13],
    ['2^62 seconds (milliseconds past a bigint)', 2 ** 62],
    ['a second more than a day', 86_401],
  ])('takes a file media read as %s as of unknown length: queue 201 and play 200', async (_what, seconds) => {
    const channel = t.guilds.voiceChannelWith([alice]);
    const url = upload(seconds);
    const target = { channelId: channel.id, serverId: channel.serverId, url };
    const queued = await send('POST', '/v1/music/queue', target);
    expect(queued.statusCode, queued.body).toBe(201);
    const played = await send('POST', '/v1/music/play', target);
    expect(played.statusCode, played.body).toBe(200);
    const player = played.json() as PlayerState;
    expect([player.current?.durationMs, ...player.queue.map((track) => track.durationMs)]).toEqual([null, null]);
    const { rows } = await t.runtime.pool.query(
      'SELECT duration_ms, ends_at FROM tracks JOIN players USING (channel_id) WHERE channel_id = $1',
      [channel.id],
    );
    expect(rows).toEqual([
      { duration_ms: null, ends_at: null },
      { duration_ms: null, ends_at: null },
    ]);
  });

  it('keeps a file of exactly a day, the longest length a client may give', async () => {
    const channel = t.guilds.voiceChannelWith([alice]);
    const res = await send('POST', '/v1/music/play', { channelId: channel.id, serverId: channel.serverId, url: upload(86_400) });
    expect(res.statusCode).toBe(200);
    expect((res.json() as PlayerState).current?.durationMs).toBe(86_400_000);
  });
});
