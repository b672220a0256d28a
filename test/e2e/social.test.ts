import { describe, expect, it } from 'vitest';
import { api, conversationOnceKnown, newUser } from './helpers.ts';

describe('friends and direct messages through the gateway', () => {
  it('befriends, messages, hides the conversation from outsiders, and stops messages after a block', async () => {
    const [alice, bob, eve] = await Promise.all([newUser('alice'), newUser('bob'), newUser('eve')]);
    const conversationId = await conversationOnceKnown(alice, bob);
    await conversationOnceKnown(eve, alice);

    const requested = await api('POST', '/v1/friends/requests', { user: alice, body: { username: bob.username } });
    expect(requested.status).toBe(201);
    expect(requested.body).toMatchObject({ status: 'pending', user: { id: bob.id, username: bob.username } });
    const incoming = await api('GET', '/v1/friends/requests', { user: bob });
    expect(incoming.body).toEqual([
      { user: expect.objectContaining({ id: alice.id, username: alice.username }), direction: 'incoming', createdAt: expect.any(String) },
    ]);
    expect((await api('POST', '/v1/friends/accept', { user: bob, body: { userId: alice.id } })).status).toBe(200);
    expect((await api('GET', '/v1/friends', { user: alice })).body.map((f: { user: { id: string } }) => f.user.id)).toEqual([bob.id]);

    const sent = await api('POST', '/v1/dm/messages', { user: alice, body: { conversationId, content: 'hello bob' } });
    expect(sent.status).toBe(201);
    expect(sent.body).toMatchObject({ conversationId, senderId: alice.id, content: 'hello bob', editedAt: null, reactions: {} });
    expect(sent.body.senderName).toEqual(expect.any(String));
    const read = await api('GET', `/v1/dm/conversations/${conversationId}/messages`, { user: bob });
    expect(read.status).toBe(200);
    expect(read.body.map((m: { id: string }) => m.id)).toEqual([sent.body.id]);

    expect((await api('GET', `/v1/dm/conversations/${conversationId}`, { user: eve })).status).toBe(404);
    expect((await api('POST', '/v1/dm/messages', { user: eve, body: { conversationId, content: 'hi' } })).status).toBe(404);
    expect((await api('GET', '/v1/friends')).status).toBe(401);

    expect((await api('POST', '/v1/friends/block', { user: bob, body: { userId: alice.id } })).status).toBe(201);
    const blocked = await api('POST', '/v1/dm/messages', { user: alice, body: { conversationId, content: 'still there?' } });
    expect(blocked).toMatchObject({ status: 403, body: { error: expect.stringContaining('blocked') } });
    expect((await api('GET', '/v1/friends', { user: alice })).body).toEqual([]);
  });
});
