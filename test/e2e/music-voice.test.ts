import { TokenVerifier } from 'livekit-server-sdk';
import { beforeAll, describe, expect, it } from 'vitest';
import { api, newUser, type TestUser } from './helpers.ts';

/**
 * Voice and music together, every service its own process: guilds knows who is in which voice
 * channel, and music asks it (rpc.guilds.voice.access over NATS) before every control.
 */
let owner: TestUser;
let listener: TestUser;
let outsider: TestUser;
let server: { id: string };
let voice: { id: string };
let text: { id: string };

beforeAll(async () => {
  [owner, listener, outsider] = await Promise.all([newUser('mvowner'), newUser('mvlistener'), newUser('mvoutsider')]);
  const created = await api('POST', '/v1/servers', { user: owner, body: { name: 'Music night', isPublic: true } });
  expect(created.status).toBe(201);
  server = created.body;
  expect((await api('POST', `/v1/servers/${server.id}/join`, { user: listener })).status).toBe(200);
  const channels = (await api('GET', `/v1/servers/${server.id}/channels`, { user: owner })).body as { id: string; channelType: string }[];
  voice = channels.find((c) => c.channelType === 'voice')!;
  text = channels.find((c) => c.channelType === 'text')!;
});

const target = () => ({ channelId: voice.id, serverId: server.id });

describe('music controlled by who is in the voice channel', () => {
  it('refuses a member who has not joined the channel (403), then lets them play once they have', async () => {
    const before = await api('POST', '/v1/music/play', { user: owner, body: { ...target(), url: 'https://example.com/one.mp3' } });
    expect(before.status).toBe(403);
    expect(before.body).toEqual({ error: 'Join the voice channel to control its music' });

    const joined = await api('POST', '/v1/voice/join', { user: owner, body: { channelId: voice.id } });
    expect(joined.status).toBe(200);
    expect(joined.body.state).toMatchObject({ userId: owner.id, channelId: voice.id, serverId: server.id });
    // The media grant for the channel's room, checked with LiveKit's own verifier (the platform's development key pair).
    const grant = await new TokenVerifier('devkey', 'secret').verify(joined.body.grant.token);
    expect(grant).toMatchObject({ sub: owner.id, video: { room: voice.id, roomJoin: true, canPublish: true } });

    const play = await api('POST', '/v1/music/play', { user: owner, body: { ...target(), url: 'https://example.com/one.mp3' } });
    expect(play.status).toBe(200);
    expect(play.body.current).toMatchObject({ url: 'https://example.com/one.mp3', requestedBy: owner.id });
    const queued = await api('POST', '/v1/music/play', { user: owner, body: { ...target(), url: 'https://example.com/two.mp3' } });
    expect(queued.body.queue.map((t: { url: string }) => t.url)).toEqual(['https://example.com/two.mp3']);
  });

  it('lists the voice state through the gateway', async () => {
    const list = await api('GET', `/v1/servers/${server.id}/voice-states`, { user: listener });
    expect(list.status).toBe(200);
    expect(list.body.map((s: { userId: string; channelId: string }) => [s.userId, s.channelId])).toContainEqual([owner.id, voice.id]);
  });

  it('two concurrent skips of the same track: one 200 {}, one 409, and one track skipped', async () => {
    expect((await api('POST', '/v1/voice/join', { user: listener, body: { channelId: voice.id } })).status).toBe(200);
    const skip = { ...target(), url: 'https://example.com/one.mp3' };
    const answers = await Promise.all([
      api('POST', '/v1/music/skip', { user: owner, body: skip }),
      api('POST', '/v1/music/skip', { user: listener, body: skip }),
    ]);
    const byStatus = answers.map((a) => ({ status: a.status, body: a.body })).sort((a, b) => a.status - b.status);
    expect(byStatus).toEqual([
      { status: 200, body: {} },
      { status: 409, body: { error: expect.any(String) } },
    ]);
    const state = await api('GET', `/v1/music/${voice.id}`, { user: listener });
    expect(state.status).toBe(200);
    expect(state.body.current).toMatchObject({ url: 'https://example.com/two.mp3' });
    expect(state.body.queue).toEqual([]);
  });

  it('refuses a member who left the channel, and a stranger, and a text channel', async () => {
    expect((await api('POST', '/v1/voice/leave', { user: listener })).status).toBe(204);
    const left = await api('POST', '/v1/music/pause', { user: listener, body: target() });
    expect(left.status).toBe(403);
    const stranger = await api('POST', '/v1/music/pause', { user: outsider, body: target() });
    expect(stranger.status).toBe(404);
    expect((await api('POST', '/v1/voice/join', { user: outsider, body: { channelId: voice.id } })).status).toBe(404);
    const textChannel = await api('POST', '/v1/music/pause', { user: owner, body: { channelId: text.id, serverId: server.id } });
    expect(textChannel.status).toBe(400);
    // Nothing of that changed the player.
    expect((await api('GET', `/v1/music/${voice.id}`, { user: owner })).body.paused).toBe(false);
  });

  it('in a musicLocked temporary channel only its owner controls the music', async () => {
    const jtc = (await api('POST', `/v1/servers/${server.id}/channels`, { user: owner, body: { name: 'Create', channelType: 'voice' } }))
      .body;
    expect((await api('PATCH', `/v1/servers/${server.id}`, { user: owner, body: { jtcChannelId: jtc.id } })).status).toBe(200);
    const created = await api('POST', '/v1/voice/join', { user: listener, body: { channelId: jtc.id } });
    expect(created.status).toBe(200);
    const room = created.body.channel;
    expect(room).toMatchObject({ isTemporary: true, ownerId: listener.id });
    // The owner of a temporary channel needs no MANAGE_CHANNELS to music-lock it.
    expect((await api('PATCH', `/v1/channels/${room.id}`, { user: listener, body: { musicLocked: true } })).status).toBe(200);

    const guest = await newUser('mvguest');
    expect((await api('POST', `/v1/servers/${server.id}/join`, { user: guest })).status).toBe(200);
    expect((await api('POST', '/v1/voice/join', { user: guest, body: { channelId: room.id } })).status).toBe(200);
    const body = { channelId: room.id, serverId: server.id, url: 'https://example.com/locked.mp3' };
    expect((await api('POST', '/v1/music/play', { user: guest, body })).status).toBe(403);
    expect((await api('POST', '/v1/music/play', { user: listener, body })).status).toBe(200);

    // The last one out deletes the temporary channel; its player is no longer reachable.
    expect((await api('POST', '/v1/voice/leave', { user: guest })).status).toBe(204);
    expect((await api('POST', '/v1/voice/leave', { user: listener })).status).toBe(204);
    expect((await api('GET', `/v1/channels/${room.id}`, { user: owner })).status).toBe(404);
    expect((await api('GET', `/v1/music/${room.id}`, { user: owner })).status).toBe(404);
  });
});
