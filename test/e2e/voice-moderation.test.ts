import { TokenVerifier } from 'livekit-server-sdk';
import { describe, expect, it } from 'vitest';
import { api, newUser } from './helpers.ts';

/** Server mute and disconnect through the gateway: the voice state changes, and the next media grant follows it. */
describe('voice moderation through the gateway', () => {
  it('server-mutes a member (their next grant cannot publish) and disconnects them (no grant after)', async () => {
    const [owner, member] = await Promise.all([newUser('vmowner'), newUser('vmmember')]);
    const server = (await api('POST', '/v1/servers', { user: owner, body: { name: 'Moderated', isPublic: true } })).body;
    expect((await api('POST', `/v1/servers/${server.id}/join`, { user: member })).status).toBe(200);
    const channels = (await api('GET', `/v1/servers/${server.id}/channels`, { user: owner })).body as { id: string; channelType: string }[];
    const voice = channels.find((c) => c.channelType === 'voice') as { id: string };
    expect((await api('POST', '/v1/voice/join', { user: member, body: { channelId: voice.id } })).status).toBe(200);
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

    expect((await api('DELETE', path, { user: owner })).status).toBe(204);
    const states = (await api('GET', `/v1/servers/${server.id}/voice-states`, { user: owner })).body as { userId: string }[];
    expect(states.map((s) => s.userId)).not.toContain(member.id);
    expect((await api('POST', '/v1/voice/grant', { user: member })).status).toBe(404);
  });
});
