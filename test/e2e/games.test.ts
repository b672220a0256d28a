import { describe, expect, it } from 'vitest';
import { GatewayClient } from './gateway-client.ts';
import { api, gateway, newUser } from './helpers.ts';

describe('the game index and activities through the gateway', () => {
  it('searches the shipped catalogue, sets an activity (served by social under /v1/users) and shows it to a friend', async () => {
    const [player, friend] = await Promise.all([newUser('games'), newUser('games')]);
    const found = await api('GET', '/v1/games?q=minecarft&limit=5', { user: player });
    expect(found.status).toBe(200);
    expect(found.body[0]).toMatchObject({ name: 'Minecraft', releaseYear: 2011 });
    const game = await api('GET', `/v1/games/${found.body[0].id}`, { user: player });
    expect(game).toMatchObject({ status: 200, body: { id: found.body[0].id, name: 'Minecraft' } });

    // An activity shows while others see the player: connected, not invisible.
    const socket = await GatewayClient.connect(gateway, { ip: player.ip });
    await socket.identify(player.token);
    const set = await api('PUT', '/v1/users/@me/activity', { user: player, body: { gameId: found.body[0].id } });
    expect(set).toMatchObject({ status: 200, body: { gameId: found.body[0].id, name: 'Minecraft', startedAt: expect.any(String) } });

    // Social learns of new users from auth's events: retry the request until it knows the friend.
    const deadline = Date.now() + 10_000;
    let requested = await api('POST', '/v1/friends/requests', { user: player, body: { userId: friend.id } });
    while (requested.status === 404 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
      requested = await api('POST', '/v1/friends/requests', { user: player, body: { userId: friend.id } });
    }
    expect(requested.status).toBe(201);
    expect((await api('POST', '/v1/friends/accept', { user: friend, body: { userId: player.id } })).status).toBe(200);
    const friends = await api('GET', '/v1/friends', { user: friend });
    expect(friends.body).toEqual([expect.objectContaining({ activity: set.body })]);

    // Guilds keeps activities from social's events for its member list.
    const server = await api('POST', '/v1/servers', { user: player, body: { name: 'Players', isPublic: true } });
    expect(server.status).toBe(201);
    const deadlineMembers = Date.now() + 10_000;
    let members = (await api('GET', `/v1/servers/${server.body.id}/members`, { user: player })).body;
    while (!members[0]?.activity && Date.now() < deadlineMembers) {
      await new Promise((r) => setTimeout(r, 100));
      members = (await api('GET', `/v1/servers/${server.body.id}/members`, { user: player })).body;
    }
    expect(members[0]).toMatchObject({ userId: player.id, activity: set.body });

    expect((await api('PUT', '/v1/users/@me/activity', { user: player, body: { name: null } })).status).toBe(204);
    expect((await api('GET', '/v1/friends', { user: friend })).body[0]).not.toHaveProperty('activity');
    expect((await api('PUT', '/v1/users/@me/activity', { body: { name: 'x' } })).status).toBe(401);
    socket.close();
  });
});
