import { REALTIME_SUBJECTS, UserConversationsRpc, UserFriendsRpc } from '@chat/contracts';
import { requestRpc } from '@chat/kit';
import { afterAll, describe, expect, it } from 'vitest';
import { serveSocialRpc } from '../src/bus/rpc.ts';
import { createHarness } from './harness.ts';

/** What social gives the real-time socket: READY's conversations, presence's friends, typing. */

const h = await createHarness();
serveSocialRpc(h.runtime.bus, h.runtime.log, h.runtime.pool);
afterAll(() => h.close());

describe('the socket RPCs', () => {
  it('answer the conversations a user takes part in and their friends', async () => {
    const [alice, bob, carol] = [await h.addUser(), await h.addUser(), await h.addUser()];
    const conversation = (await h.call(alice, 'POST', '/v1/dm/conversations', { userIds: [bob.id] })).body;
    expect((await h.call(alice, 'POST', '/v1/friends/requests', { userId: carol.id })).status).toBe(201);
    expect((await h.call(carol, 'POST', '/v1/friends/accept', { userId: alice.id })).status).toBe(200);
    expect(await requestRpc(h.runtime.bus, UserConversationsRpc, { userId: alice.id })).toEqual({
      conversationIds: [conversation.id],
    });
    expect(await requestRpc(h.runtime.bus, UserConversationsRpc, { userId: carol.id })).toEqual({ conversationIds: [] });
    expect(await requestRpc(h.runtime.bus, UserFriendsRpc, { userId: alice.id })).toEqual({ userIds: [carol.id] });
    expect(await requestRpc(h.runtime.bus, UserFriendsRpc, { userId: bob.id })).toEqual({ userIds: [] });
  });
});

describe('POST /v1/dm/conversations/{id}/typing', () => {
  it('answers 204 and publishes social.typing.started with the participants, storing nothing', async () => {
    const [alice, bob] = [await h.addUser(), await h.addUser()];
    const conversation = (await h.call(alice, 'POST', '/v1/dm/conversations', { userIds: [bob.id] })).body;
    await h.runtime.relay.flush();
    const stream = await h.runtime.bus.jsm.streams.info(h.runtime.bus.name('SOCIAL'));
    const res = await h.call(alice, 'POST', `/v1/dm/conversations/${conversation.id}/typing`);
    expect(res.status).toBe(204);
    const msg = await h.runtime.bus.jsm.streams.getMessage(h.runtime.bus.name('SOCIAL'), { seq: stream.state.last_seq + 1 });
    expect(msg?.subject).toBe(h.runtime.bus.subject(REALTIME_SUBJECTS.conversationTyping));
    expect(msg?.json<{ data: unknown }>().data).toMatchObject({
      conversationId: conversation.id,
      userId: alice.id,
      participantIds: [alice.id, bob.id].sort(),
    });
    const { rows } = await h.runtime.pool.query('SELECT count(*)::int AS n FROM outbox WHERE subject = $1', [
      REALTIME_SUBJECTS.conversationTyping,
    ]);
    expect(rows[0].n).toBe(0);
  });

  it('leaves out of a group typing event whoever blocked the typist', async () => {
    const [alice, bob, carol] = [await h.addUser(), await h.addUser(), await h.addUser()];
    const group = (await h.call(carol, 'POST', '/v1/dm/conversations', { userIds: [alice.id, bob.id] })).body;
    expect((await h.call(bob, 'POST', '/v1/friends/block', { userId: alice.id })).status).toBe(201);
    await h.runtime.relay.flush();
    const typingOf = async (user: typeof alice) => {
      const stream = await h.runtime.bus.jsm.streams.info(h.runtime.bus.name('SOCIAL'));
      expect((await h.call(user, 'POST', `/v1/dm/conversations/${group.id}/typing`)).status).toBe(204);
      const msg = await h.runtime.bus.jsm.streams.getMessage(h.runtime.bus.name('SOCIAL'), { seq: stream.state.last_seq + 1 });
      return msg?.json<{ data: { userId: string; participantIds: string[] } }>().data;
    };
    expect(await typingOf(alice)).toMatchObject({ userId: alice.id, participantIds: [alice.id, carol.id].sort() });
    // The block is Bob's: he still reaches Alice, and Carol reaches everyone.
    expect(await typingOf(bob)).toMatchObject({ userId: bob.id, participantIds: [alice.id, bob.id, carol.id].sort() });
    expect(await typingOf(carol)).toMatchObject({ userId: carol.id, participantIds: [alice.id, bob.id, carol.id].sort() });
  });

  it('answers 404 to someone outside the conversation', async () => {
    const [alice, bob, eve] = [await h.addUser(), await h.addUser(), await h.addUser()];
    const conversation = (await h.call(alice, 'POST', '/v1/dm/conversations', { userIds: [bob.id] })).body;
    const res = await h.call(eve, 'POST', `/v1/dm/conversations/${conversation.id}/typing`);
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: expect.any(String) });
  });
});
