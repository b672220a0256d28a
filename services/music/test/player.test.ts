import { MAX_QUEUE_LENGTH, type PlayerState } from '@chat/contracts';
import { v7 as uuidv7 } from 'uuid';
import { afterAll, describe, expect, it } from 'vitest';
import { startMusicTest } from './harness.ts';

const t = await startMusicTest();
afterAll(() => t.close());

const alice = uuidv7();
const bob = uuidv7();

async function control(userId: string, action: string, payload: Record<string, unknown>) {
  return t.app.inject({ method: 'POST', url: `/v1/music/${action}`, headers: await t.auth(userId), payload });
}

async function state(userId: string, channelId: string): Promise<PlayerState> {
  const res = await t.app.inject({ method: 'GET', url: `/v1/music/${channelId}`, headers: await t.auth(userId) });
  expect(res.statusCode).toBe(200);
  return res.json();
}

async function dbTracks(channelId: string) {
  const { rows } = await t.runtime.pool.query('SELECT url FROM tracks WHERE channel_id = $1 ORDER BY seq', [channelId]);
  return rows.map((r) => r.url as string);
}

async function dbPlayer(channelId: string) {
  const { rows } = await t.runtime.pool.query('SELECT * FROM players WHERE channel_id = $1', [channelId]);
  return rows[0];
}

/** A voice channel with alice in it and the given tracks queued (the first playing). */
async function channelPlaying(...urls: string[]) {
  const channel = t.guilds.voiceChannelWith([alice]);
  const target = { channelId: channel.id, serverId: channel.serverId };
  for (const url of urls) expect((await control(alice, 'play', { ...target, url })).statusCode).toBe(200);
  return { channel, target };
}

describe('play', () => {
  it('plays at once on an idle player, stores the track and publishes music.player.updated', async () => {
    const channel = t.guilds.voiceChannelWith([alice]);
    const res = await control(alice, 'play', { channelId: channel.id, serverId: channel.serverId, url: 'https://example.com/a.mp3' });

    expect(res.statusCode).toBe(200);
    const body: PlayerState = res.json();
    expect(body).toMatchObject({ channelId: channel.id, serverId: channel.serverId, paused: false, volume: 100, queue: [], version: 1 });
    expect(body.current).toMatchObject({ url: 'https://example.com/a.mp3', title: 'https://example.com/a.mp3', requestedBy: alice });
    expect(body.current?.positionMs).toBeLessThan(1_000);
    expect(await dbTracks(channel.id)).toEqual(['https://example.com/a.mp3']);
    expect((await dbPlayer(channel.id)).started_at).not.toBeNull();
    const events = (await t.playerEvents()).filter((e) => e.player.channelId === channel.id);
    expect(events).toEqual([{ action: 'play', actorId: alice, player: body }]);
  });

  it('queues behind the current track without restarting it, keeping the given title', async () => {
    const { channel, target } = await channelPlaying('https://example.com/a.mp3');
    const before = await state(alice, channel.id);
    const res = await control(alice, 'play', { ...target, url: 'http://example.com/b.ogg', title: '  B side  ' });

    expect(res.statusCode).toBe(200);
    const body: PlayerState = res.json();
    expect(body.current?.id).toBe(before.current?.id);
    expect(body.current?.startedAt).toBe(before.current?.startedAt);
    expect(body.queue).toEqual([expect.objectContaining({ url: 'http://example.com/b.ogg', title: 'B side', requestedBy: alice })]);
    expect(body.version).toBe(before.version + 1);
    expect(await dbTracks(channel.id)).toEqual(['https://example.com/a.mp3', 'http://example.com/b.ogg']);
  });

  it.each([
    ['an ftp url', { url: 'ftp://example.com/a.mp3' }, /^body.url: must be an http or https URL/],
    ['a javascript: url', { url: 'javascript:alert(1)' }, /^body.url: must be an http or https URL/],
    ['no url', {}, /^body.url: /],
    ['a url of 2049 characters', { url: `https://example.com/${'a'.repeat(2029)}` }, /^body.url: /],
    ['a channelId that is not a UUID', { url: 'https://example.com/a.mp3', channelId: 'general' }, /^body.channelId: must be a UUID/],
    ['an empty title', { url: 'https://example.com/a.mp3', title: '   ' }, /^body.title: /],
  ])('answers 400 for %s and changes nothing', async (_case, fields, message) => {
    const channel = t.guilds.voiceChannelWith([alice]);
    const res = await control(alice, 'play', { channelId: channel.id, serverId: channel.serverId, ...fields });

    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ error: expect.stringMatching(message) });
    expect(await dbPlayer(channel.id)).toBeUndefined();
  });

  it(`answers 409 once the queue holds ${MAX_QUEUE_LENGTH} tracks`, async () => {
    const { channel, target } = await channelPlaying();
    for (let i = 0; i < MAX_QUEUE_LENGTH; i++) {
      expect((await control(alice, 'play', { ...target, url: `https://example.com/${i}.mp3` })).statusCode).toBe(200);
    }
    const res = await control(alice, 'play', { ...target, url: 'https://example.com/one-too-many.mp3' });

    expect(res.statusCode).toBe(409);
    expect(res.json()).toEqual({ error: `The queue is full (${MAX_QUEUE_LENGTH} tracks)` });
    expect(await dbTracks(channel.id)).toHaveLength(MAX_QUEUE_LENGTH);
  });

  it('answers 401 without a token, or with one that does not verify', async () => {
    const channel = t.guilds.voiceChannelWith([alice]);
    const payload = { channelId: channel.id, serverId: channel.serverId, url: 'https://example.com/a.mp3' };
    const anonymous = await t.app.inject({ method: 'POST', url: '/v1/music/play', payload });
    const forged = await t.app.inject({ method: 'POST', url: '/v1/music/play', headers: { authorization: 'Bearer a.b.c' }, payload });

    expect(anonymous.statusCode).toBe(401);
    expect(anonymous.json()).toEqual({ error: expect.any(String) });
    expect(forged.statusCode).toBe(401);
    expect(await dbPlayer(channel.id)).toBeUndefined();
  });
});

describe('skip', () => {
  it('answers {} and starts the next track when url is the current track', async () => {
    const { channel, target } = await channelPlaying('https://example.com/a.mp3', 'https://example.com/b.mp3');
    const res = await control(alice, 'skip', { ...target, url: 'https://example.com/a.mp3' });

    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({});
    const after = await state(alice, channel.id);
    expect(after.current?.url).toBe('https://example.com/b.mp3');
    expect(after.queue).toEqual([]);
    expect(await dbTracks(channel.id)).toEqual(['https://example.com/b.mp3']);
    const last = (await t.playerEvents()).filter((e) => e.player.channelId === channel.id).at(-1);
    expect(last).toMatchObject({ action: 'skip', actorId: alice, player: { version: 3, current: { url: 'https://example.com/b.mp3' } } });
  });

  it('leaves the player idle after the last track', async () => {
    const { channel, target } = await channelPlaying('https://example.com/a.mp3');
    expect((await control(alice, 'skip', { ...target, url: 'https://example.com/a.mp3' })).statusCode).toBe(200);

    expect(await state(alice, channel.id)).toMatchObject({ current: null, queue: [], paused: false, version: 2 });
    expect(await dbTracks(channel.id)).toEqual([]);
    expect((await dbPlayer(channel.id)).started_at).toBeNull();
  });

  it('answers 409 for a stale url, a stale trackId or an idle player, and changes nothing', async () => {
    const { channel, target } = await channelPlaying('https://example.com/a.mp3', 'https://example.com/b.mp3');
    const before = await state(alice, channel.id);
    const eventsBefore = (await t.playerEvents()).length;

    const staleUrl = await control(alice, 'skip', { ...target, url: 'https://example.com/b.mp3' });
    const staleId = await control(alice, 'skip', { ...target, url: 'https://example.com/a.mp3', trackId: uuidv7() });
    const idle = t.guilds.voiceChannelWith([alice]);
    const onIdle = await control(alice, 'skip', { channelId: idle.id, serverId: idle.serverId, url: 'https://example.com/a.mp3' });

    for (const res of [staleUrl, staleId, onIdle]) {
      expect(res.statusCode).toBe(409);
      expect(res.json()).toEqual({ error: 'That track is no longer playing' });
    }
    expect(await state(alice, channel.id)).toMatchObject({ version: before.version, current: { id: before.current?.id } });
    expect(await dbTracks(channel.id)).toEqual(['https://example.com/a.mp3', 'https://example.com/b.mp3']);
    expect(await t.playerEvents()).toHaveLength(eventsBefore);
  });
});

describe('pause and resume', () => {
  it('freezes the position while paused and continues from it on resume', async () => {
    const start = t.clock.set();
    const { channel, target } = await channelPlaying('https://example.com/a.mp3');
    t.clock.advance(1_200);
    const paused = await control(alice, 'pause', target);

    expect(paused.statusCode).toBe(200);
    const atPause: PlayerState = paused.json();
    expect(atPause.paused).toBe(true);
    expect(atPause.current?.startedAt).toBe(start.toISOString());
    expect(atPause.current?.positionMs).toBe(1_200);
    expect(Number((await dbPlayer(channel.id)).paused_position_ms)).toBe(1_200);
    t.clock.advance(5_000);
    expect((await state(alice, channel.id)).current?.positionMs).toBe(1_200);

    const resumed: PlayerState = (await control(alice, 'resume', target)).json();
    expect(resumed.paused).toBe(false);
    expect(resumed.current?.positionMs).toBe(1_200);
    // The start moved forward by exactly the length of the pause.
    expect(Date.parse(resumed.current?.startedAt ?? '') - start.getTime()).toBe(5_000);
    expect((await dbPlayer(channel.id)).paused_position_ms).toBeNull();
    t.clock.advance(300);
    expect((await state(alice, channel.id)).current?.positionMs).toBe(1_500);
    t.clock.release();
  });

  it('changes nothing and publishes nothing when already in the asked state', async () => {
    const { channel, target } = await channelPlaying('https://example.com/a.mp3');
    const resumeWhilePlaying = await control(alice, 'resume', target);
    await control(alice, 'pause', target);
    const eventsBefore = (await t.playerEvents()).length;
    const pauseAgain = await control(alice, 'pause', target);

    expect(resumeWhilePlaying.statusCode).toBe(200);
    expect(resumeWhilePlaying.json()).toMatchObject({ paused: false, version: 1 });
    expect(pauseAgain.statusCode).toBe(200);
    expect(pauseAgain.json()).toMatchObject({ paused: true, version: 2 });
    expect(await t.playerEvents()).toHaveLength(eventsBefore);
    expect((await dbPlayer(channel.id)).version).toBe(2);
  });

  it.each(['pause', 'resume'])('%s answers 409 when nothing is playing and creates no player', async (action) => {
    const channel = t.guilds.voiceChannelWith([alice]);
    const res = await control(alice, action, { channelId: channel.id, serverId: channel.serverId });

    expect(res.statusCode).toBe(409);
    expect(res.json()).toEqual({ error: 'Nothing is playing' });
    expect(await dbPlayer(channel.id)).toBeUndefined();
  });
});

describe('stop and volume', () => {
  it('stop clears the current track and the queue and keeps the volume', async () => {
    const { channel, target } = await channelPlaying('https://example.com/a.mp3', 'https://example.com/b.mp3');
    await control(alice, 'volume', { ...target, volume: 40 });
    const res = await control(alice, 'stop', target);

    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ current: null, queue: [], paused: false, volume: 40, version: 4 });
    expect(await dbTracks(channel.id)).toEqual([]);
    const last = (await t.playerEvents()).filter((e) => e.player.channelId === channel.id).at(-1);
    expect(last).toMatchObject({ action: 'stop', actorId: alice });
  });

  it('sets the volume from 0 to 200', async () => {
    const { channel, target } = await channelPlaying('https://example.com/a.mp3');
    for (const volume of [0, 200]) {
      const res = await control(alice, 'volume', { ...target, volume });
      expect(res.statusCode).toBe(200);
      expect(res.json()).toMatchObject({ volume });
      expect((await dbPlayer(channel.id)).volume).toBe(volume);
    }
  });

  it.each([201, -1, 1.5, '100', null])('answers 400 for volume %j and changes nothing', async (volume) => {
    const { channel, target } = await channelPlaying('https://example.com/a.mp3');
    const res = await control(alice, 'volume', { ...target, volume });

    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ error: expect.stringMatching(/^body.volume: /) });
    expect((await dbPlayer(channel.id)).volume).toBe(100);
  });
});

describe('an idle player with queued tracks', () => {
  /** A voice channel with alice in it and tracks added with POST /v1/music/queue: nothing plays. */
  async function channelQueued(...urls: string[]) {
    const channel = t.guilds.voiceChannelWith([alice]);
    const target = { channelId: channel.id, serverId: channel.serverId };
    for (const url of urls) {
      const res = await t.app.inject({ method: 'POST', url: '/v1/music/queue', headers: await t.auth(alice), payload: { ...target, url } });
      expect(res.statusCode).toBe(201);
    }
    return { channel, target };
  }

  it('lists every queued track as upcoming, none as current', async () => {
    const { channel } = await channelQueued('https://example.com/a.mp3', 'https://example.com/b.mp3');
    const idle = await state(alice, channel.id);
    expect(idle.current).toBeNull();
    expect(idle.queue.map((track) => track.url)).toEqual(['https://example.com/a.mp3', 'https://example.com/b.mp3']);
  });

  it('removes the first listed track (204): it is not playing', async () => {
    const { channel } = await channelQueued('https://example.com/a.mp3', 'https://example.com/b.mp3');
    const first = (await state(alice, channel.id)).queue[0]?.id as string;
    const res = await t.app.inject({ method: 'DELETE', url: `/v1/music/${channel.id}/queue/${first}`, headers: await t.auth(alice) });

    expect(res.statusCode).toBe(204);
    expect(await state(alice, channel.id)).toMatchObject({ current: null, queue: [{ url: 'https://example.com/b.mp3' }] });
    expect(await dbTracks(channel.id)).toEqual(['https://example.com/b.mp3']);
    const last = (await t.playerEvents()).filter((e) => e.player.channelId === channel.id).at(-1);
    expect(last).toMatchObject({ action: 'remove', actorId: alice });
  });

  it('stop clears the queue and publishes the change', async () => {
    const { channel, target } = await channelQueued('https://example.com/a.mp3', 'https://example.com/b.mp3');
    const res = await control(alice, 'stop', target);

    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ current: null, queue: [], version: 3 });
    expect(await dbTracks(channel.id)).toEqual([]);
    const last = (await t.playerEvents()).filter((e) => e.player.channelId === channel.id).at(-1);
    expect(last).toMatchObject({ action: 'stop', actorId: alice, player: { queue: [], version: 3 } });
  });

  it('stop on an idle, empty player changes nothing and publishes nothing', async () => {
    const { channel, target } = await channelQueued('https://example.com/a.mp3');
    expect((await control(alice, 'stop', target)).statusCode).toBe(200);
    const eventsBefore = (await t.playerEvents()).length;
    const again = await control(alice, 'stop', target);

    expect(again.statusCode).toBe(200);
    expect(again.json()).toMatchObject({ current: null, queue: [], version: 2 });
    expect((await dbPlayer(channel.id)).version).toBe(2);
    expect(await t.playerEvents()).toHaveLength(eventsBefore);
  });

  it('skip with the first listed url answers 409 and starts nothing', async () => {
    const { channel, target } = await channelQueued('https://example.com/a.mp3', 'https://example.com/b.mp3');
    const eventsBefore = (await t.playerEvents()).length;
    const res = await control(alice, 'skip', { ...target, url: 'https://example.com/a.mp3' });

    expect(res.statusCode).toBe(409);
    expect(res.json()).toEqual({ error: 'That track is no longer playing' });
    expect(await state(alice, channel.id)).toMatchObject({ current: null, version: 2 });
    expect(await dbTracks(channel.id)).toEqual(['https://example.com/a.mp3', 'https://example.com/b.mp3']);
    expect((await dbPlayer(channel.id)).started_at).toBeNull();
    expect(await t.playerEvents()).toHaveLength(eventsBefore);
  });
});

describe('POST /v1/music/queue and /v1/music/play with an Idempotency-Key', () => {
  it.each([
    ['queue', 201],
    ['play', 200],
  ] as const)(
    '/%s answers a retry with the first result and adds the track once; another track under the key is 422',
    async (action, status) => {
      const channel = t.guilds.voiceChannelWith([alice]);
      const key = uuidv7();
      const send = async (url: string) =>
        t.app.inject({
          method: 'POST',
          url: `/v1/music/${action}`,
          headers: { ...(await t.auth(alice)), 'idempotency-key': key },
          payload: { channelId: channel.id, serverId: channel.serverId, url },
        });
      const first = await send('https://example.com/a.mp3');
      const retry = await send('https://example.com/a.mp3');
      const other = await send('https://example.com/b.mp3');

      expect(first.statusCode).toBe(status);
      expect(retry.statusCode).toBe(status);
      expect(retry.headers['idempotent-replayed']).toBe('true');
      expect(retry.json()).toEqual(first.json());
      expect(other.statusCode).toBe(422);
      expect(other.json()).toEqual({ error: 'This Idempotency-Key was already used for a different request' });
      expect(await dbTracks(channel.id)).toEqual(['https://example.com/a.mp3']);
      const events = (await t.playerEvents()).filter((e) => e.player.channelId === channel.id);
      expect(events.map((e) => e.action)).toEqual([action]);
    },
  );

  it("holds no database connection while it asks guilds for the caller's access", async () => {
    const channel = t.guilds.voiceChannelWith([alice]);
    const pool = t.runtime.pool;
    const held: number[] = [];
    t.guilds.answering = async () => {
      // Sampled over a while: the relay's poll and the clock take a connection for a moment now and then.
      for (let i = 0; i < 10; i++) {
        held.push(pool.totalCount - pool.idleCount);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    };
    try {
      const res = await t.app.inject({
        method: 'POST',
        url: '/v1/music/queue',
        headers: { ...(await t.auth(alice)), 'idempotency-key': uuidv7() },
        payload: { channelId: channel.id, serverId: channel.serverId, url: 'https://example.com/slow.mp3' },
      });
      expect(res.statusCode).toBe(201);
    } finally {
      t.guilds.answering = undefined;
    }
    expect(Math.min(...held)).toBe(0);
    expect(await dbTracks(channel.id)).toEqual(['https://example.com/slow.mp3']);
  });
});

describe('PATCH /v1/music/:channelId', () => {
  const patch = async (channelId: string, payload: Record<string, unknown>) =>
    t.app.inject({ method: 'PATCH', url: `/v1/music/${channelId}`, headers: await t.auth(alice), payload });

  it('sets the volume, alone or with the modes, and publishes it', async () => {
    const { channel } = await channelPlaying('https://example.com/a.mp3');
    const res = await patch(channel.id, { volume: 50 });

    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ volume: 50, loop: 'off', shuffle: false, version: 2 });
    expect((await dbPlayer(channel.id)).volume).toBe(50);
    const last = (await t.playerEvents()).filter((e) => e.player.channelId === channel.id).at(-1);
    expect(last).toMatchObject({ action: 'modes', actorId: alice, player: { volume: 50, version: 2 } });

    const both = await patch(channel.id, { volume: 200, loop: 'queue' });
    expect(both.json()).toMatchObject({ volume: 200, loop: 'queue', version: 3 });
    expect(await dbPlayer(channel.id)).toMatchObject({ volume: 200, loop: 'queue' });
  });

  it('changes nothing and publishes nothing for the volume it already has', async () => {
    const { channel } = await channelPlaying('https://example.com/a.mp3');
    const eventsBefore = (await t.playerEvents()).length;
    const res = await patch(channel.id, { volume: 100 });

    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ volume: 100, version: 1 });
    expect(await t.playerEvents()).toHaveLength(eventsBefore);
  });

  it.each([201, -1, 1.5, '50'])('answers 400 for volume %j and changes nothing', async (volume) => {
    const { channel } = await channelPlaying('https://example.com/a.mp3');
    const res = await patch(channel.id, { volume, loop: 'track' });

    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ error: expect.stringMatching(/^body.volume: /) });
    expect(await dbPlayer(channel.id)).toMatchObject({ volume: 100, loop: 'off' });
  });
});

describe('GET /v1/music/:channelId', () => {
  it('shows a member who is not in the channel the whole state', async () => {
    const { channel } = await channelPlaying('https://example.com/a.mp3', 'https://example.com/b.mp3');
    t.guilds.setUser(channel.id, bob, { inChannel: false });
    const seen = await state(bob, channel.id);

    expect(seen).toMatchObject({ channelId: channel.id, serverId: channel.serverId, paused: false, volume: 100, version: 2 });
    expect(seen.current?.url).toBe('https://example.com/a.mp3');
    expect(seen.queue.map((track) => track.url)).toEqual(['https://example.com/b.mp3']);
  });

  it('answers an idle player for a voice channel that never played', async () => {
    const channel = t.guilds.voiceChannelWith([alice]);
    expect(await state(alice, channel.id)).toEqual({
      channelId: channel.id,
      serverId: channel.serverId,
      current: null,
      paused: false,
      volume: 100,
      queue: [],
      version: 0,
      loop: 'off',
      shuffle: false,
    });
    expect(await dbPlayer(channel.id)).toBeUndefined();
  });

  it('answers 400 for a channel id that is not a UUID', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/v1/music/general', headers: await t.auth(alice) });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ error: expect.stringMatching(/^path.channelId: /) });
  });
});
