import { GatewayClient, lastAttempt } from '@chat/testkit';
import { describe, expect, it } from 'vitest';
import { attempt, failure, gateway, newClientUser, recordingClient } from './helpers.ts';

describe('the game index and activities through the gateway', () => {
  it('searches the shipped catalogue, sets an activity (served by social under /v1/users) and shows it to a friend', async () => {
    const [player, friend] = await Promise.all([newClientUser('games'), newClientUser('games')]);
    const found = await player.client.social.search({ query: { q: 'minecarft', limit: 5 } });
    expect(player.status()).toBe(200);
    expect(found[0]).toMatchObject({ name: 'Minecraft', releaseYear: 2011 });
    const gameId = found[0]!.id;
    const game = await player.client.social.get({ params: { id: gameId } });
    expect(player.status()).toBe(200);
    expect(game).toMatchObject({ id: gameId, name: 'Minecraft' });

    // An activity shows while others see the player: connected, not invisible.
    const socket = await GatewayClient.connect(gateway, { ip: player.ip });
    await socket.identify(player.token);
    const set = await player.client.social.putActivity({ body: { gameId } });
    expect(player.status()).toBe(200);
    expect(set).toMatchObject({ gameId, name: 'Minecraft', startedAt: expect.any(String) });

    // Social learns of new users from auth's events: retry the request until it knows the friend.
    const requested = await lastAttempt(
      () => attempt(player, (c) => c.social.sendRequest({ body: { userId: friend.id } })),
      (res) => res.status !== 404,
    );
    expect(requested.status).toBe(201);
    await friend.client.social.accept({ body: { userId: player.id } });
    expect(friend.status()).toBe(200);
    expect(await friend.client.social.list()).toEqual([expect.objectContaining({ activity: set })]);

    // Guilds keeps activities from social's events for its member list.
    const server = await player.client.servers.createServer({ body: { name: 'Players', isPublic: true } });
    expect(player.status()).toBe(201);
    const members = await lastAttempt(
      () => player.client.servers.listMembers({ params: { serverId: server.id } }),
      (list) => Boolean(list[0]?.activity),
    );
    expect(members[0]).toMatchObject({ userId: player.id, activity: set });

    await player.client.social.putActivity({ body: { name: null } });
    expect(player.status()).toBe(204);
    expect((await friend.client.social.list())[0]).not.toHaveProperty('activity');
    expect(await failure(recordingClient().client.social.putActivity({ body: { name: 'x' } }))).toMatchObject({ status: 401 });
    socket.close();
  });
});
