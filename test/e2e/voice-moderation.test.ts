import { GatewayClient, joinRoom, lastAttempt, liveKitRooms, participantIn, until } from '@chat/testkit';
import { TokenVerifier } from 'livekit-server-sdk';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { api, gateway, newUser, publicServer, randomIp, type TestUser } from './helpers.ts';

/** Server mute and disconnect through the gateway: the voice state changes, and the next media grant follows it. */
describe('voice moderation through the gateway', () => {
  it('server-mutes a member (their next grant, and their connection, cannot publish) and disconnects them (from the room, again when they come back with a kept grant; no grant after)', async () => {
    const [owner, member] = await Promise.all([newUser('vmowner'), newUser('vmmember')]);
    const server = (await api('POST', '/v1/servers', { user: owner, body: { name: 'Moderated', isPublic: true } })).body;
    expect((await api('POST', `/v1/servers/${server.id}/join`, { user: member })).status).toBe(200);
    const channels = (await api('GET', `/v1/servers/${server.id}/channels`, { user: owner })).body as { id: string; channelType: string }[];
    const voice = channels.find((c) => c.channelType === 'voice') as { id: string };
    const joined = await api('POST', '/v1/voice/join', { user: member, body: { channelId: voice.id } });
    expect(joined.status).toBe(200);
    // Connected to the voice room on the LiveKit the platform uses.
    const rooms = liveKitRooms(inject('backing').livekit);
    const connection = await joinRoom(joined.body.grant);
    await until(() => participantIn(rooms, voice.id, member.id), { what: 'the member is in the room' });
    const path = `/v1/servers/${server.id}/voice-states/${member.id}`;

    const selfMute = await api('PATCH', path, { user: member, body: { mute: true } });
    expect(selfMute.status).toBe(403);
    expect(selfMute.body).toEqual({ error: 'Missing permission MUTE_MEMBERS' });
    const muted = await api('PATCH', path, { user: owner, body: { mute: true } });
    expect(muted.status).toBe(200);
    expect(muted.body).toMatchObject({ userId: member.id, channelId: voice.id, serverMute: true, serverDeaf: false });
    const grant = await api('POST', '/v1/voice/grant', { user: member });
    const claims = await new TokenVerifier('devkey', 'secret').verify(grant.body.token);
    expect(claims).toMatchObject({ sub: member.id, video: { room: voice.id, canPublish: false, canSubscribe: true } });
    const permission = () => participantIn(rooms, voice.id, member.id).then((p) => p?.permission);
    expect(await lastAttempt(permission, (p) => p?.canPublish === false, 20_000)).toMatchObject({ canPublish: false, canSubscribe: true });

    expect((await api('DELETE', path, { user: owner })).status).toBe(204);
    expect(await connection.disconnected(20_000)).toBe(true);
    const states = (await api('GET', `/v1/servers/${server.id}/voice-states`, { user: owner })).body as { userId: string }[];
    expect(states.map((s) => s.userId)).not.toContain(member.id);
    expect((await api('POST', '/v1/voice/grant', { user: member })).status).toBe(404);
    // The grant they kept still lets them connect (LiveKit cannot revoke it); guilds, which watches
    // the room it took them out of, takes them out again within seconds, well before its 30 s check of every room.
    const back = await joinRoom(grant.body);
    expect(await back.disconnected(10_000)).toBe(true);
  });
});

/** Voice states that end with their channel: the gateway can no longer ask who viewed it, so guilds tells it. */
describe('voice states that end with their channel, through the gateway', () => {
  const WAIT = 20_000;
  const clients: GatewayClient[] = [];
  afterAll(() => {
    for (const c of clients) c.close();
  });
  async function identified(user: TestUser) {
    const client = await GatewayClient.connect(gateway, { ip: randomIp() });
    clients.push(client);
    await client.identify(user.token);
    return client;
  }
  const ended = (client: GatewayClient, userId: string, channelId: string) =>
    client.dispatch('VOICE_STATE_DELETE', (d) => d.userId === userId && d.channelId === channelId, WAIT);

  it('tells the member and a watcher (VOICE_STATE_DELETE) of a voice channel deleted with the member in it, and of a temporary channel a disconnect emptied', async () => {
    const [owner, member, watcher] = await Promise.all([newUser('veowner'), newUser('vemember'), newUser('vewatcher')]);
    const { serverId } = await publicServer(owner, [member, watcher]);
    const newVoice = async (name: string) =>
      (await api('POST', `/v1/servers/${serverId}/channels`, { user: owner, body: { name, channelType: 'voice' } })).body.id as string;
    const [doomed, jtc] = [await newVoice('doomed'), await newVoice('join to create')];
    expect((await api('PATCH', `/v1/servers/${serverId}`, { user: owner, body: { jtcChannelId: jtc } })).status).toBe(200);
    const [m, w] = [await identified(member), await identified(watcher)];

    expect((await api('POST', '/v1/voice/join', { user: member, body: { channelId: doomed } })).status).toBe(200);
    await w.dispatch('VOICE_STATE_UPDATE', (d) => d.userId === member.id && d.channelId === doomed, WAIT);
    expect((await api('DELETE', `/v1/channels/${doomed}`, { user: owner })).status).toBe(204);
    for (const c of [m, w])
      expect((await ended(c, member.id, doomed)).d).toEqual({ userId: member.id, serverId, channelId: doomed, reason: 'removed' });

    const joined = await api('POST', '/v1/voice/join', { user: member, body: { channelId: jtc } });
    expect(joined.status).toBe(200);
    const temp = joined.body.channel.id as string;
    await w.dispatch('VOICE_STATE_UPDATE', (d) => d.userId === member.id && d.channelId === temp, WAIT);
    expect((await api('DELETE', `/v1/servers/${serverId}/voice-states/${member.id}`, { user: owner })).status).toBe(204);
    for (const c of [m, w]) {
      expect((await ended(c, member.id, temp)).d).toEqual({ userId: member.id, serverId, channelId: temp, reason: 'disconnected' });
      expect((await c.dispatch('CHANNEL_DELETE', (d) => d.id === temp, WAIT)).d).toEqual({ id: temp, serverId });
    }
  });
});
