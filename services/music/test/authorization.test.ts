import { type MatrixCall, type MatrixRequest, type MatrixRow, rowTitle, runMatrixRow } from '@chat/testkit';
import { v7 as uuidv7 } from 'uuid';
import { afterAll, describe, expect, it } from 'vitest';
import { startMusicTest } from './harness.ts';

// Who may control is guilds' answer to rpc.guilds.voice.access; here the stand-in guilds of the
// harness gives each case (see harness.ts), over the real NATS.
const t = await startMusicTest();
afterAll(() => t.close());

const owner = uuidv7();
const manager = uuidv7();
const listener = uuidv7();
const bystander = uuidv7();
const outsider = uuidv7();

async function play(userId: string, target: { channelId: string; serverId: string }) {
  return t.app.inject({
    method: 'POST',
    url: '/v1/music/play',
    headers: await t.auth(userId),
    payload: { ...target, url: 'https://example.com/a.mp3' },
  });
}

async function view(userId: string, channelId: string) {
  return t.app.inject({ method: 'GET', url: `/v1/music/${channelId}`, headers: await t.auth(userId) });
}

async function playerRows(channelId: string) {
  return (await t.runtime.pool.query('SELECT 1 FROM players WHERE channel_id = $1', [channelId])).rowCount;
}

const eventsFor = async (channelId: string) => (await t.playerEvents()).filter((e) => e.player.channelId === channelId);

/** One server: an open voice channel, a musicLocked voice channel owned by `owner`, a text channel. */
function server() {
  const serverId = uuidv7();
  const open = t.guilds.addChannel({ serverId });
  const locked = t.guilds.addChannel({ serverId, ownerId: owner, musicLocked: true });
  const text = t.guilds.addChannel({ serverId, channelType: 'text' });
  for (const channel of [open, locked, text]) {
    t.guilds.setUser(channel.id, owner);
    t.guilds.setUser(channel.id, manager, { canManageChannel: true });
    t.guilds.setUser(channel.id, listener);
    t.guilds.setUser(channel.id, bystander, { inChannel: false });
  }
  const target = (channel: { id: string }) => ({ channelId: channel.id, serverId });
  return { serverId, open, locked, text, target };
}

describe('who may control the music of a voice channel', () => {
  it('lets a member who is in the channel play', async () => {
    const { open, target } = server();
    const res = await play(listener, target(open));
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ current: { requestedBy: listener } });
    expect(await playerRows(open.id)).toBe(1);
  });

  it('answers 403 to a member who is not in the channel, and changes nothing', async () => {
    const { open, target } = server();
    const res = await play(bystander, target(open));
    expect(res.statusCode).toBe(403);
    expect(res.json()).toEqual({ error: 'Join the voice channel to control its music' });
    expect(await playerRows(open.id)).toBe(0);
    expect(await eventsFor(open.id)).toEqual([]);
  });

  it('answers 404 to someone who is not a member of the server, so its channels stay hidden', async () => {
    const { open, target } = server();
    t.guilds.setUser(open.id, outsider, { isMember: false, inChannel: false });
    const control = await play(outsider, target(open));
    const read = await view(outsider, open.id);
    for (const res of [control, read]) {
      expect(res.statusCode).toBe(404);
      expect(res.json()).toEqual({ error: 'Channel not found' });
    }
    expect(await playerRows(open.id)).toBe(0);
  });

  it('in a musicLocked channel answers 403 to a plain member, even one in the channel', async () => {
    const { locked, target } = server();
    const res = await play(listener, target(locked));
    expect(res.statusCode).toBe(403);
    expect(res.json()).toEqual({ error: expect.stringContaining('Music is locked in this channel') });
    expect(await playerRows(locked.id)).toBe(0);
  });

  it('in a musicLocked channel lets its owner and a member with MANAGE_CHANNELS control', async () => {
    const { locked, target } = server();
    const byOwner = await play(owner, target(locked));
    const byManager = await play(manager, target(locked));
    expect(byOwner.statusCode).toBe(200);
    expect(byManager.statusCode).toBe(200);
    expect(byManager.json()).toMatchObject({ current: { requestedBy: owner }, queue: [{ requestedBy: manager }] });
  });

  it('in a musicLocked channel lets a member holding one of the DJ roles control', async () => {
    const { locked, target } = server();
    const dj = uuidv7();
    t.guilds.setUser(locked.id, dj, { isDj: true });
    const res = await play(dj, target(locked));
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ current: { requestedBy: dj } });
    const notInChannel = uuidv7();
    t.guilds.setUser(locked.id, notInChannel, { isDj: true, inChannel: false });
    expect((await play(notInChannel, target(locked))).statusCode).toBe(403);
  });

  it('in a musicLocked channel still asks the owner to be in the channel', async () => {
    const { locked, target } = server();
    t.guilds.setUser(locked.id, owner, { inChannel: false });
    const res = await play(owner, target(locked));
    expect(res.statusCode).toBe(403);
    expect(res.json()).toEqual({ error: 'Join the voice channel to control its music' });
  });

  it('answers 400 for a text channel, to controls and reads', async () => {
    const { text, target } = server();
    const control = await play(listener, target(text));
    const read = await view(listener, text.id);
    for (const res of [control, read]) {
      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual({ error: 'Music plays only in voice channels' });
    }
    expect(await playerRows(text.id)).toBe(0);
  });

  it('answers 404 when serverId is not the channel’s server, even one the caller belongs to', async () => {
    const first = server();
    const second = server();
    const res = await play(listener, { channelId: first.open.id, serverId: second.serverId });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({ error: 'Channel not found' });
    expect(await playerRows(first.open.id)).toBe(0);
  });

  it('answers 404 for a channel guilds does not know (its status crosses the NATS hop)', async () => {
    const unknown = uuidv7();
    const control = await play(listener, { channelId: unknown, serverId: uuidv7() });
    const read = await view(listener, unknown);
    for (const res of [control, read]) {
      expect(res.statusCode).toBe(404);
      expect(res.json()).toEqual({ error: 'Channel not found' });
    }
    expect(await playerRows(unknown)).toBe(0);
  });

  it('applies the same rule to every control, not only play', async () => {
    const { open, locked, target } = server();
    expect((await play(owner, target(open))).statusCode).toBe(200);
    expect((await play(owner, target(locked))).statusCode).toBe(200);
    const controls = [
      ['skip', { url: 'https://example.com/a.mp3' }],
      ['pause', {}],
      ['resume', {}],
      ['stop', {}],
      ['volume', { volume: 10 }],
    ] as const;
    for (const [action, extra] of controls) {
      for (const [userId, channel, status] of [
        [bystander, open, 403],
        [listener, locked, 403],
        [outsider, open, 404],
      ] as const) {
        const res = await t.app.inject({
          method: 'POST',
          url: `/v1/music/${action}`,
          headers: await t.auth(userId),
          payload: { ...target(channel), ...extra },
        });
        expect({ action, status: res.statusCode }).toEqual({ action, status });
      }
    }
    // Nothing refused reached the players: each still has its one track at version 1.
    const { rows } = await t.runtime.pool.query('SELECT version FROM players WHERE channel_id = ANY($1)', [[open.id, locked.id]]);
    expect(rows).toEqual([{ version: 1 }, { version: 1 }]);
  });

  it('lets a member who is not in the channel read the player', async () => {
    const { open, target } = server();
    await play(listener, target(open));
    const res = await view(bystander, open.id);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ channelId: open.id, current: { url: 'https://example.com/a.mp3' } });
  });
});

/**
 * Every music route as a row: a fresh server per actor whose open voice channel already plays the
 * owner's track (with one more queued), asked by the channel's owner, a member with
 * MANAGE_CHANNELS, a listener in the channel, a member who is not in it, a non-member and a caller
 * without a token. A refusal leaves the player as it was.
 */
describe('the music authorization matrix', () => {
  const ACTORS = ['owner', 'manager', 'listener', 'bystander', 'outsider', 'anonymous'] as const;
  type Actor = (typeof ACTORS)[number];
  const users: Record<Exclude<Actor, 'anonymous'>, string> = { owner, manager, listener, bystander, outsider };
  const TRACK = 'https://example.com/a.mp3';

  /** A fresh server whose open channel plays a track of the owner's with another queued. */
  async function playing(): Promise<
    MatrixRequest & { params: { channelId: string; itemId: string }; body: { channelId: string; serverId: string } }
  > {
    const { open, target } = server();
    t.guilds.setUser(open.id, outsider, { isMember: false, inChannel: false });
    expect((await play(owner, target(open))).statusCode).toBe(200);
    const queued = await t.app.inject({
      method: 'POST',
      url: '/v1/music/queue',
      headers: await t.auth(owner),
      payload: { ...target(open), url: 'https://example.com/b.mp3' },
    });
    expect(queued.statusCode, queued.body).toBe(201);
    const itemId = queued.json().queue.at(-1).id;
    return { params: { channelId: open.id, itemId }, body: target(open) };
  }
  const player = async (request: MatrixRequest) =>
    (await t.runtime.pool.query('SELECT version FROM players WHERE channel_id = $1', [request.params!.channelId])).rows;
  const control = (extra: Record<string, unknown>) => async () => {
    const request = await playing();
    return { ...request, body: { ...request.body, ...extra } };
  };
  const CONTROL = (status: number) => ({ owner: status, manager: status, listener: status, bystander: 403, outsider: 404, anonymous: 401 });

  const ROWS: MatrixRow<Actor>[] = [
    { route: 'POST /v1/music/play', request: control({ url: 'https://example.com/c.mp3' }), state: player, expect: CONTROL(200) },
    { route: 'POST /v1/music/skip', request: control({ url: TRACK }), state: player, expect: CONTROL(200) },
    { route: 'POST /v1/music/pause', request: control({}), state: player, expect: CONTROL(200) },
    { route: 'POST /v1/music/resume', request: control({}), state: player, expect: CONTROL(200) },
    { route: 'POST /v1/music/stop', request: control({}), state: player, expect: CONTROL(200) },
    { route: 'POST /v1/music/volume', request: control({ volume: 10 }), state: player, expect: CONTROL(200) },
    { route: 'POST /v1/music/queue', request: control({ url: 'https://example.com/d.mp3' }), state: player, expect: CONTROL(201) },
    {
      route: 'DELETE /v1/music/:channelId/queue/:itemId',
      request: async () => ({ params: (await playing()).params }),
      state: player,
      expect: CONTROL(204),
    },
    {
      route: 'PATCH /v1/music/:channelId',
      request: async () => ({ params: (await playing()).params, body: { loop: 'queue' } }),
      state: player,
      expect: CONTROL(200),
    },
    {
      route: 'GET /v1/music/:channelId',
      name: 'any member reads',
      request: async () => ({ params: (await playing()).params }),
      expect: { owner: 200, manager: 200, listener: 200, bystander: 200, outsider: 404, anonymous: 401 },
    },
  ];

  const call: MatrixCall<Actor> = async (actor, method, url, request) => {
    const res = await t.app.inject({
      method,
      url,
      headers: actor === 'anonymous' ? {} : await t.auth(users[actor]),
      ...(request.body === undefined ? {} : { payload: request.body as object }),
    });
    return { status: res.statusCode, body: res.body ? res.json() : undefined };
  };

  it.each(ROWS.map((row) => ({ ...row, title: rowTitle(row) })))('$title', async (row) => {
    expect(await runMatrixRow(row, ACTORS, call)).toEqual({ statuses: row.expect, problems: [] });
  });
});
