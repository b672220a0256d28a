import { joinRoom, lastAttempt, liveKitRooms, participantIn, until } from '@chat/testkit';
import { TokenVerifier } from 'livekit-server-sdk';
import { describe, expect, inject, it } from 'vitest';
import { api, conversationOnceKnown, fileSockets, newUser } from './helpers.ts';

const { identified: socketOf } = fileSockets();

describe('calls through the gateway', () => {
  it('rings, answers with a media grant for the call room, and ends when both leave, disconnected from the room (again, when one comes back with a kept grant)', async () => {
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
    // Both connect to the room on the LiveKit the platform uses; leaving the call disconnects them.
    const rooms = liveKitRooms(inject('backing').livekit);
    const [aliceIn, bobIn] = [await joinRoom(started.body.grant), await joinRoom(accepted.body.grant)];
    await until(async () => (await rooms.listParticipants(started.body.id)).length === 2, { what: 'both are in the room' });

    await api('POST', `/v1/calls/${started.body.id}/leave`, { user: alice });
    expect(await aliceIn.disconnected(20_000)).toBe(true);
    // The grant alice kept still connects (LiveKit cannot revoke it); social, which watches the room
    // it took her out of, takes her out again within seconds, well before its 30 s check of every room.
    const aliceBack = await joinRoom(started.body.grant);
    expect(await aliceBack.disconnected(10_000)).toBe(true);
    expect(await participantIn(rooms, started.body.id, bob.id)).toBeDefined();
    const ended = await api('POST', `/v1/calls/${started.body.id}/leave`, { user: bob });
    expect(ended.body).toMatchObject({ state: 'ended', endReason: 'completed' });
    expect(await bobIn.disconnected(20_000)).toBe(true);
    expect(
      await lastAttempt(
        () => rooms.listParticipants(started.body.id),
        (p) => p.length === 0,
      ),
    ).toEqual([]);
  });

  it('shows the live call on the conversation and leaves call_started and call_ended messages, dispatched as DM_MESSAGE_CREATE', async () => {
    const [alice, bob] = await Promise.all([newUser('caller'), newUser('callee')]);
    const conversationId = await conversationOnceKnown(alice, bob);
    const bobSocket = await socketOf(bob);
    const conversation = () => api('GET', `/v1/dm/conversations/${conversationId}`, { user: bob });
    expect((await conversation()).body.call).toBeNull();

    const call = (await api('POST', `/v1/dm/conversations/${conversationId}/call`, { user: alice })).body;
    const ringing = await conversation();
    expect(ringing.status).toBe(200);
    expect(ringing.body.call).toMatchObject({ id: call.id, state: 'ringing', initiatorId: alice.id });
    const startedFrame = await bobSocket.dispatch('DM_MESSAGE_CREATE', (d) => d.type === 'call_started');
    expect(startedFrame.d).toMatchObject({ conversationId, senderId: alice.id, content: '', call: { id: call.id, durationSeconds: null } });

    await api('POST', `/v1/calls/${call.id}/accept`, { user: bob });
    expect((await conversation()).body.call).toMatchObject({ id: call.id, state: 'active' });
    await api('POST', `/v1/calls/${call.id}/leave`, { user: alice });
    const ended = (await api('POST', `/v1/calls/${call.id}/leave`, { user: bob })).body;
    const endedFrame = await bobSocket.dispatch('DM_MESSAGE_CREATE', (d) => d.type === 'call_ended');
    const duration = Math.round((Date.parse(ended.endedAt) - Date.parse(call.createdAt)) / 1000);
    expect(endedFrame.d).toMatchObject({ conversationId, senderId: alice.id, call: { id: call.id, durationSeconds: duration } });

    const after = await conversation();
    expect(after.body.call).toBeNull();
    expect(after.body.lastMessage).toMatchObject({ id: endedFrame.d.id, type: 'call_ended' });
    const messages = await api('GET', `/v1/dm/conversations/${conversationId}/messages`, { user: alice });
    expect(messages.body.map((m: { type: string }) => m.type)).toEqual(['call_ended', 'call_started']);
  });
});
