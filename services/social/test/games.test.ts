import { randomUUID } from 'node:crypto';
import { REALTIME_SUBJECTS } from '@chat/contracts';
import type { ConsumerHandle } from '@chat/kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { consumeDisconnections } from '../src/bus/disconnections.ts';
import { loadCatalogue } from '../src/domain/game-catalogue.ts';
import { createHarness, eventually, startPresenceStandIn } from './harness.ts';

let now = new Date('2031-05-01T12:00:00.000Z');
const h = await createHarness({ clock: () => now });
afterAll(() => h.close());
beforeAll(async () => {
  await loadCatalogue(h.runtime.pool);
});

// A stand-in for the gateway, which knows who is connected: `seen` is what it answers.
const { live: seen } = await startPresenceStandIn(h.runtime);

const rows = async (sql: string, params: unknown[] = []) => (await h.runtime.pool.query(sql, params)).rows;
const search = async (q: string, limit = 10) => {
  const res = await h.call(await h.addUser(), 'GET', `/v1/games?q=${encodeURIComponent(q)}&limit=${limit}`);
  expect(res.status).toBe(200);
  return res.body.map((g: { name: string }) => g.name) as string[];
};
const gameNamed = async (name: string) => (await rows('SELECT id FROM games WHERE name = $1', [name]))[0].id as string;

describe('the catalogue', () => {
  it('ships at least 1,000 games with their aliases, and loads a file once', async () => {
    const [{ n }] = await rows('SELECT count(*)::int AS n FROM games');
    expect(n).toBeGreaterThanOrEqual(1000);
    const again = await loadCatalogue(h.runtime.pool);
    expect(again).toMatchObject({ loaded: false, games: n });
    const [{ aliases }] = await rows("SELECT aliases FROM games WHERE name = 'Grand Theft Auto V'");
    expect(aliases).toEqual(expect.arrayContaining(['GTA V', 'GTA 5']));
  });

  it('keeps game ids across a forced reload of the same file', async () => {
    const before = await gameNamed('Minecraft');
    expect(await loadCatalogue(h.runtime.pool, undefined, { force: true })).toMatchObject({ loaded: true, removed: 0 });
    expect(await gameNamed('Minecraft')).toBe(before);
  });
});

describe('GET /v1/games', () => {
  it('finds a game through a typo', async () => {
    expect((await search('minecarft'))[0]).toBe('Minecraft');
    expect((await search('skyrm'))[0]).toMatch(/^The Elder Scrolls V: Skyrim/);
    expect((await search('stardew vally'))[0]).toBe('Stardew Valley');
  });

  it('finds a game by an alias, accents and punctuation aside', async () => {
    expect((await search('GTA V'))[0]).toBe('Grand Theft Auto V');
    expect((await search('botw'))[0]).toBe('The Legend of Zelda: Breath of the Wild');
    expect((await search('cs:go'))[0]).toBe('Counter-Strike: Global Offensive');
    expect((await search('Pokemon Emerald'))[0]).toBe('Pokémon Emerald');
  });

  it('ranks the exact name first, then names that start with the query, then the rest', async () => {
    const portal = await search('portal');
    expect(portal.slice(0, 2)).toEqual(['Portal', 'Portal 2']);
    const doom = await search('doom', 20);
    expect(doom[0]).toBe('Doom');
    const prefixed = doom.filter((n) => n.toLowerCase().startsWith('doom'));
    // Every name that starts with "doom" comes before any that merely resembles it.
    expect(doom.slice(0, prefixed.length)).toEqual(prefixed);
  });

  it('answers names in order without a query, honours limit, and refuses a bad limit', async () => {
    const user = await h.addUser();
    const first = await h.call(user, 'GET', '/v1/games?limit=3');
    expect(first.status).toBe(200);
    expect(first.body).toHaveLength(3);
    expect(first.body[0]).toEqual({
      id: expect.any(String),
      name: expect.any(String),
      aliases: expect.any(Array),
      executables: expect.any(Array),
      coverUrl: null,
      releaseYear: expect.any(Number),
    });
    expect((await h.call(user, 'GET', '/v1/games?q=xqjvwkpf')).body).toEqual([]);
    for (const limit of ['0', '101', 'x']) expect((await h.call(user, 'GET', `/v1/games?limit=${limit}`)).status).toBe(400);
    expect((await h.call(undefined, 'GET', '/v1/games?q=doom')).status).toBe(401);
  });
});

describe('the search plan', () => {
  it('probes the trigram index rather than scoring every name', async () => {
    const plan = (
      await rows("EXPLAIN SELECT game_id FROM game_names n WHERE n.name % 'minecarft' OR n.name LIKE 'minecarft%' OR n.name %> 'minecarft'")
    )
      .map((r) => r['QUERY PLAN'])
      .join('\n');
    expect(plan).toContain('game_names_trgm');
    expect(plan).not.toContain('Seq Scan');
  });
});

describe('GET /v1/games/{id}', () => {
  it('answers the game, 404 for an unknown id and 400 for a malformed one', async () => {
    const user = await h.addUser();
    const id = await gameNamed('Hades');
    expect(await h.call(user, 'GET', `/v1/games/${id}`)).toEqual({
      status: 200,
      body: { id, name: 'Hades', aliases: [], executables: ['Hades.exe'], coverUrl: null, releaseYear: 2020 },
    });
    expect(await h.call(user, 'GET', '/v1/games/0190f0f0-0000-7000-8000-000000000000')).toEqual({
      status: 404,
      body: { error: 'Game not found' },
    });
    expect((await h.call(user, 'GET', '/v1/games/nope')).status).toBe(400);
  });
});

describe('PUT /v1/users/@me/activity', () => {
  const activityEvents = async (userId: string) =>
    (await h.events('social.activity.updated'))
      .filter((e) => e.data.userId === userId)
      .map((e) => e.data.activity as { name: string } | null);
  const clear = (token: string) =>
    h.app.inject({
      method: 'PUT',
      url: '/v1/users/@me/activity',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      payload: 'null',
    });

  it('sets a game of the index with its start time, keeps that time when repeated, and announces changes only', async () => {
    const user = await h.addUser();
    const gameId = await gameNamed('Minecraft');
    const set = await h.call(user, 'PUT', '/v1/users/@me/activity', { gameId });
    expect(set).toEqual({ status: 200, body: { gameId, name: 'Minecraft', startedAt: now.toISOString() } });
    const started = now;
    now = new Date(now.getTime() + 60_000);
    expect((await h.call(user, 'PUT', '/v1/users/@me/activity', { gameId })).body.startedAt).toBe(started.toISOString());
    expect(await rows('SELECT game_id, name FROM activities WHERE user_id = $1', [user.id])).toEqual([
      { game_id: gameId, name: 'Minecraft' },
    ]);
    expect(await activityEvents(user.id)).toEqual([{ gameId, name: 'Minecraft', startedAt: started.toISOString() }]);
  });

  it('sets a free name, and clears with null (204) or {"name": null}', async () => {
    const user = await h.addUser();
    const set = await h.call(user, 'PUT', '/v1/users/@me/activity', { name: '  My homebrew game ' });
    expect(set).toEqual({ status: 200, body: { gameId: null, name: 'My homebrew game', startedAt: now.toISOString() } });
    const cleared = await clear(user.token);
    expect(cleared.statusCode).toBe(204);
    expect(cleared.body).toBe('');
    expect(await rows('SELECT 1 FROM activities WHERE user_id = $1', [user.id])).toEqual([]);
    expect((await clear(user.token)).statusCode).toBe(204);
    await h.call(user, 'PUT', '/v1/users/@me/activity', { name: 'Again' });
    expect((await h.call(user, 'PUT', '/v1/users/@me/activity', { name: null })).status).toBe(204);
    expect((await activityEvents(user.id)).map((a) => a?.name ?? null)).toEqual(['My homebrew game', null, 'Again', null]);
  });

  it('answers 404 for an unknown game and 400 for a body with neither or both fields, changing nothing', async () => {
    const user = await h.addUser();
    expect(await h.call(user, 'PUT', '/v1/users/@me/activity', { gameId: '0190f0f0-0000-7000-8000-000000000000' })).toEqual({
      status: 404,
      body: { error: 'Game not found' },
    });
    const gameId = await gameNamed('Minecraft');
    for (const body of [{}, { gameId, name: 'x' }, { name: '' }, { name: 'x'.repeat(129) }, { gameId: 'nope' }]) {
      const res = await h.call(user, 'PUT', '/v1/users/@me/activity', body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body).toEqual({ error: expect.any(String) });
    }
    expect(await rows('SELECT 1 FROM activities WHERE user_id = $1', [user.id])).toEqual([]);
    expect(await activityEvents(user.id)).toEqual([]);
  });

  it("shows a friend's activity in the friend list while others see the friend, not while they are offline", async () => {
    const [me, playing, idle] = [await h.addUser(), await h.addUser(), await h.addUser()];
    seen.set(playing.id, 'online');
    seen.set(idle.id, 'online');
    for (const friend of [playing, idle]) {
      await h.call(me, 'POST', '/v1/friends/requests', { userId: friend.id });
      await h.call(friend, 'POST', '/v1/friends/accept', { userId: me.id });
    }
    const gameId = await gameNamed('Terraria');
    await h.call(playing, 'PUT', '/v1/users/@me/activity', { gameId });
    const friends = await h.call(me, 'GET', '/v1/friends');
    expect(friends.status).toBe(200);
    const byId = new Map(friends.body.map((f: { user: { id: string } }) => [f.user.id, f]));
    expect(byId.get(playing.id)).toMatchObject({
      user: { status: 'online' },
      activity: { gameId, name: 'Terraria', startedAt: now.toISOString() },
    });
    expect(byId.get(idle.id)).not.toHaveProperty('activity');
    // Offline (or invisible) to others: showing the game would tell that they are there.
    seen.delete(playing.id);
    const hidden = (await h.call(me, 'GET', '/v1/friends')).body.find((f: { user: { id: string } }) => f.user.id === playing.id);
    expect(hidden).toMatchObject({ user: { status: 'offline' } });
    expect(hidden).not.toHaveProperty('activity');
  });

  it('ends an activity when the gateway says the last session closed, once, and keeps one set after that', async () => {
    const consumer: ConsumerHandle = await consumeDisconnections(h.runtime);
    try {
      const [gone, back] = [await h.addUser(), await h.addUser()];
      await h.call(gone, 'PUT', '/v1/users/@me/activity', { name: 'Chess' });
      await h.call(back, 'PUT', '/v1/users/@me/activity', { name: 'Go' });
      const at = now.toISOString();
      now = new Date(now.getTime() + 1_000);
      await h.call(back, 'PUT', '/v1/users/@me/activity', { name: 'Poker' });
      const disconnected = (userId: string) => ({
        id: randomUUID(),
        subject: REALTIME_SUBJECTS.userDisconnected,
        occurredAt: at,
        data: { userId, at },
      });
      const first = disconnected(gone.id);
      for (const envelope of [first, { ...first }, disconnected(back.id)]) {
        // The same event twice (a redelivery under another message id) is applied once.
        await h.runtime.bus.js.publish(h.runtime.bus.subject(envelope.subject), JSON.stringify(envelope), { msgID: randomUUID() });
      }
      const processed = async () =>
        (await rows("SELECT count(*)::int AS n FROM processed_events WHERE consumer = 'social-disconnections'"))[0].n >= 2;
      await eventually(processed);
      expect(await rows('SELECT name FROM activities WHERE user_id = ANY($1) ORDER BY name', [[gone.id, back.id]])).toEqual([
        { name: 'Poker' },
      ]);
      expect(await activityEvents(gone.id)).toEqual([{ gameId: null, name: 'Chess', startedAt: at }, null]);
      expect((await activityEvents(back.id)).map((a) => a?.name ?? null)).toEqual(['Go', 'Poker']);
    } finally {
      await consumer.stop();
    }
  });
});
