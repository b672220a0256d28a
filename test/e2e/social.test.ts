import { describe, expect, it } from 'vitest';
import { conversationOnceKnown, failure, newClientUser, recordingClient } from './helpers.ts';

describe('friends and direct messages through the gateway', () => {
  it('befriends, messages, hides the conversation from outsiders, and stops messages after a block', async () => {
    const [alice, bob, eve] = await Promise.all([newClientUser('alice'), newClientUser('bob'), newClientUser('eve')]);
    const conversationId = await conversationOnceKnown(alice, bob);
    await conversationOnceKnown(eve, alice);

    const requested = await alice.client.social.sendRequest({ body: { username: bob.username } });
    expect(alice.status()).toBe(201);
    expect(requested).toMatchObject({ status: 'pending', user: { id: bob.id, username: bob.username } });
    const incoming = await bob.client.social.listRequests();
    expect(bob.status()).toBe(200);
    expect(incoming).toEqual([
      { user: expect.objectContaining({ id: alice.id, username: alice.username }), direction: 'incoming', createdAt: expect.any(String) },
    ]);
    await bob.client.social.accept({ body: { userId: alice.id } });
    expect(bob.status()).toBe(200);
    expect((await alice.client.social.list()).map((f) => f.user.id)).toEqual([bob.id]);

    const sent = await alice.client.social.sendMessage({ body: { conversationId, content: 'hello bob' } });
    expect(alice.status()).toBe(201);
    expect(sent).toMatchObject({ conversationId, senderId: alice.id, content: 'hello bob', editedAt: null, reactions: {} });
    expect(sent.senderName).toEqual(expect.any(String));
    const read = await bob.client.social.listMessages({ params: { id: conversationId } });
    expect(bob.status()).toBe(200);
    expect(read.map((m) => m.id)).toEqual([sent.id]);

    expect(await failure(eve.client.social.getConversation({ params: { id: conversationId } }))).toMatchObject({ status: 404 });
    expect(await failure(eve.client.social.sendMessage({ body: { conversationId, content: 'hi' } }))).toMatchObject({ status: 404 });
    expect(await failure(recordingClient().client.social.list())).toMatchObject({ status: 401 });

    await bob.client.social.block({ body: { userId: alice.id } });
    expect(bob.status()).toBe(201);
    const blocked = await failure(alice.client.social.sendMessage({ body: { conversationId, content: 'still there?' } }));
    expect(blocked).toMatchObject({ status: 403, body: { error: expect.stringContaining('blocked') } });
    expect(await alice.client.social.list()).toEqual([]);
  });
});
