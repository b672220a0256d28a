import { TokenVerifier } from 'livekit-server-sdk';
import { describe, expect, it } from 'vitest';
import { api, conversationOnceKnown, newUser } from './helpers.ts';

describe('calls through the gateway', () => {
  it('rings, answers with a media grant for the call room, and ends when both leave', async () => {
    const [alice, bob, eve] = await Promise.all([newUser('caller'), newUser('callee'), newUser('outsider')]);
    const conversationId = await conversationOnceKnown(alice, bob);
    const started = await api('POST', `/v1/dm/conversations/${conversationId}/call`, { user: alice });
    expect(started.status).toBe(201);
    expect(started.body).toMatchObject({ state: 'ringing', initiatorId: alice.id });
    expect((await api('GET', `/v1/calls/${started.body.id}`, { user: eve })).status).toBe(404);

    const accepted = await api('POST', `/v1/calls/${started.body.id}/accept`, { user: bob });
    expect(accepted.status).toBe(200);
    const grant = await new TokenVerifier('devkey', 'secret').verify(accepted.body.grant.token);
    expect(grant).toMatchObject({ sub: bob.id, video: { room: started.body.id, canPublish: true } });

    await api('POST', `/v1/calls/${started.body.id}/leave`, { user: alice });
    const ended = await api('POST', `/v1/calls/${started.body.id}/leave`, { user: bob });
    expect(ended.body).toMatchObject({ state: 'ended', endReason: 'completed' });
  });
});
