import { afterAll, describe, expect, it, vi } from 'vitest';
import { conversationForParticipant, deleteConversation, deleteParticipant, lockGroupParticipants } from '../src/db/conversations.ts';
import { createHarness, eventually } from './harness.ts';

/** Issue 16, item 5: blocks in group conversations, and leaving a group. */
const h = await createHarness();
afterAll(() => h.close());

type User = Awaited<ReturnType<typeof h.addUser>>;
const rows = async (sql: string, params: unknown[] = []) => (await h.runtime.pool.query(sql, params)).rows;

async function group(owner: User, ...others: User[]): Promise<string> {
  const res = await h.call(owner, 'POST', '/v1/dm/conversations', { userIds: others.map((o) => o.id) });
  expect(res.status).toBe(201);
  return res.body.id;
}
const send = (user: User, conversationId: string, content: string) => h.call(user, 'POST', '/v1/dm/messages', { conversationId, content });
const contentsSeenBy = async (user: User, conversationId: string) =>
  (await h.call(user, 'GET', `/v1/dm/conversations/${conversationId}/messages`)).body.map((m: { content: string }) => m.content);
const block = async (blocker: User, blocked: User) =>
  expect((await h.call(blocker, 'POST', '/v1/friends/block', { userId: blocked.id })).status).toBe(201);
const leave = (user: User, conversationId: string) => h.call(user, 'DELETE', `/v1/dm/conversations/${conversationId}/members/@me`);

/**
 * The leave of `user` as leaveConversation writes it (its locks, the participant, the group with its
 * last one), held open on a connection of its own until `commit`.
 */
async function leaveHeldOpen(user: User, conversationId: string) {
  const tx = await h.runtime.pool.connect();
  try {
    await tx.query('BEGIN');
    await conversationForParticipant(tx, conversationId, user.id, { lock: true });
    const remaining = (await lockGroupParticipants(tx, conversationId)).filter((id) => id !== user.id);
    await deleteParticipant(tx, conversationId, user.id);
    if (remaining.length === 0) await deleteConversation(tx, conversationId);
  } catch (err) {
    await tx.query('ROLLBACK').catch(() => {});
    tx.release();
    throw err;
  }
  return {
    async commit() {
      try {
        await tx.query('COMMIT');
      } finally {
        tx.release();
      }
    },
  };
}

/** A request in flight, and whether it has been answered yet. */
function inFlight<T>(request: Promise<T>) {
  const flight = { answered: false, answer: request };
  flight.answer = request.then((res) => {
    flight.answered = true;
    return res;
  });
  return flight;
}

/** How many statements of this test's database wait for a row lock (requests queued behind a held transaction). */
const waitingForLocks = async () =>
  (await rows(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`))[0].n;

describe('blocks in a group', () => {
  it('does not deliver a blocked user’s messages to the blocker, in the list, the last message or the event', async () => {
    const [alice, bob, carol] = [await h.addUser(), await h.addUser(), await h.addUser()];
    await block(alice, bob);
    // Carol (say bob's second account) puts the two together: the group is made, alice never sees bob.
    const id = await group(carol, alice, bob);
    expect((await send(carol, id, 'from carol')).status).toBe(201);
    const fromBob = await send(bob, id, 'from bob');
    expect(fromBob.status).toBe(201);

    expect(await contentsSeenBy(alice, id)).toEqual(['from carol']);
    expect(await contentsSeenBy(carol, id)).toEqual(['from bob', 'from carol']);
    expect(await contentsSeenBy(bob, id)).toEqual(['from bob', 'from carol']);
    const alicesView = (await h.call(alice, 'GET', `/v1/dm/conversations/${id}`)).body;
    expect(alicesView.lastMessage.content).toBe('from carol');
    const event = (await h.events('social.dm.created')).find((e) => (e.data.message as { id: string }).id === fromBob.body.id);
    expect((event!.data.participantIds as string[]).sort()).toEqual([bob.id, carol.id].sort());
    expect((await h.call(bob, 'PUT', `/v1/dm/messages/${fromBob.body.id}/reactions/%F0%9F%91%8D/@me`)).status).toBe(204);
    const reaction = (await h.events('social.dm.reaction.added')).find((e) => e.data.messageId === fromBob.body.id);
    expect(reaction!.data.participantIds).not.toContain(alice.id);

    // The blocker chose not to see bob; once unblocked, bob's messages show again.
    expect((await h.call(alice, 'DELETE', `/v1/friends/block/${bob.id}`)).status).toBe(204);
    expect(await contentsSeenBy(alice, id)).toEqual(['from bob', 'from carol']);
  });

  it('dates the group for the blocker by the newest message they see, not by a blocked user’s newer one', async () => {
    const [alice, bob, carol] = [await h.addUser(), await h.addUser(), await h.addUser()];
    await block(alice, bob);
    const id = await group(carol, alice, bob);
    // The two posts a minute apart, whatever the machine's speed: only Date is faked.
    const start = Date.now();
    vi.useFakeTimers({ toFake: ['Date'] });
    let fromCarol: { id: string; createdAt: string };
    let fromBob: { id: string; createdAt: string };
    try {
      vi.setSystemTime(start + 1_000);
      fromCarol = (await send(carol, id, 'from carol')).body;
      vi.setSystemTime(start + 61_000);
      fromBob = (await send(bob, id, 'from bob')).body;
    } finally {
      vi.useRealTimers();
    }
    expect(fromBob.createdAt > fromCarol.createdAt).toBe(true);

    const alicesView = await h.call(alice, 'GET', `/v1/dm/conversations/${id}`);
    expect(alicesView.status).toBe(200);
    expect({ last: alicesView.body.lastMessage?.id, at: alicesView.body.lastActivityAt }).toEqual({
      last: fromCarol.id,
      at: fromCarol.createdAt,
    });
    const alicesList = (await h.call(alice, 'GET', '/v1/dm/conversations')).body;
    expect(alicesList).toEqual([alicesView.body]);
    // Everyone else sees the group as active when bob posted.
    expect((await h.call(carol, 'GET', `/v1/dm/conversations/${id}`)).body).toMatchObject({
      lastMessage: { id: fromBob.id },
      lastActivityAt: fromBob.createdAt,
    });

    expect((await h.call(alice, 'DELETE', `/v1/friends/block/${bob.id}`)).status).toBe(204);
    expect((await h.call(alice, 'GET', `/v1/dm/conversations/${id}`)).body).toMatchObject({
      lastMessage: { id: fromBob.id },
      lastActivityAt: fromBob.createdAt,
    });
  });

  it('does not let a blocked user add the blocker to a group, nor the blocker add them', async () => {
    const [alice, bob, carol] = [await h.addUser(), await h.addUser(), await h.addUser()];
    await block(alice, bob);
    const before = (await rows('SELECT count(*) FROM conversations'))[0].count;
    // To bob, alice answers like a user who does not exist: opening reveals no block.
    expect(await h.call(bob, 'POST', '/v1/dm/conversations', { userIds: [alice.id, carol.id] })).toEqual({
      status: 404,
      body: { error: 'User not found' },
    });
    expect(await h.call(bob, 'POST', '/v1/dm/conversations', { userIds: [alice.id] })).toEqual({
      status: 404,
      body: { error: 'User not found' },
    });
    // Alice knows whom she blocked.
    expect(await h.call(alice, 'POST', '/v1/dm/conversations', { userIds: [bob.id, carol.id] })).toEqual({
      status: 403,
      body: { error: 'You have blocked this user' },
    });
    expect((await rows('SELECT count(*) FROM conversations'))[0].count).toBe(before);
  });
});

describe('DELETE /v1/dm/conversations/{id}/members/@me', () => {
  it('leaves a group: gone from the leaver’s list, closed to them, the owner handed over, an event written', async () => {
    const [owner, second, third] = [await h.addUser(), await h.addUser(), await h.addUser()];
    const id = await group(owner, second, third);
    const successor = (await h.call(owner, 'GET', `/v1/dm/conversations/${id}`)).body.participants[1].id;

    const left = await leave(owner, id);
    expect(left.status).toBe(204);
    expect(left.body).toBeUndefined();
    expect((await h.call(owner, 'GET', `/v1/dm/conversations/${id}`)).status).toBe(404);
    expect((await h.call(owner, 'GET', '/v1/dm/conversations')).body.map((c: { id: string }) => c.id)).not.toContain(id);
    expect((await send(owner, id, 'still here?')).status).toBe(404);
    expect((await leave(owner, id)).status).toBe(404);

    const remaining = (await h.call(second, 'GET', `/v1/dm/conversations/${id}`)).body;
    expect(remaining.ownerId).toBe(successor);
    expect(remaining.participants.map((p: { id: string }) => p.id).sort()).toEqual([second.id, third.id].sort());
    expect((await send(second, id, 'bye owner')).status).toBe(201);
    const events = (await h.events('social.conversation.left')).filter((e) => e.data.conversationId === id);
    expect(events).toEqual([
      {
        subject: 'social.conversation.left',
        data: { conversationId: id, userId: owner.id, ownerId: successor, participantIds: expect.arrayContaining([second.id, third.id]) },
      },
    ]);
  });

  it('keeps the owner when someone else leaves, and removes the group with its last participant', async () => {
    const [owner, a, b] = [await h.addUser(), await h.addUser(), await h.addUser()];
    const id = await group(owner, a, b);
    expect((await send(a, id, 'hi')).status).toBe(201);
    expect((await leave(a, id)).status).toBe(204);
    expect((await h.call(owner, 'GET', `/v1/dm/conversations/${id}`)).body.ownerId).toBe(owner.id);
    expect((await leave(owner, id)).status).toBe(204);
    expect((await leave(b, id)).status).toBe(204);
    expect(await rows('SELECT id FROM conversations WHERE id = $1', [id])).toEqual([]);
    expect(await rows('SELECT id FROM direct_messages WHERE conversation_id = $1', [id])).toEqual([]);
  });

  it('answers 404 to a post of the last member while their leave commits, and leaves nothing of the group behind', async () => {
    const [owner, a, b] = [await h.addUser(), await h.addUser(), await h.addUser()];
    const id = await group(owner, a, b);
    expect((await leave(b, id)).status).toBe(204);
    expect((await leave(owner, id)).status).toBe(204);
    const leaving = await leaveHeldOpen(a, id);
    const posting = inFlight(send(a, id, 'as the group goes'));
    try {
      await eventually(async () => posting.answered || (await waitingForLocks()) > 0, { what: 'the post waits for the leave' });
    } finally {
      await leaving.commit();
    }
    expect(await posting.answer).toEqual({ status: 404, body: { error: 'Conversation not found' } });
    expect(await rows('SELECT id FROM conversations WHERE id = $1', [id])).toEqual([]);
    expect(await rows('SELECT id FROM direct_messages WHERE conversation_id = $1', [id])).toEqual([]);
  });

  it('lands no post of a leaver after their leave, and reaches only those who remain with a post that waited for it', async () => {
    const [owner, leaver, stayer] = [await h.addUser(), await h.addUser(), await h.addUser()];
    const id = await group(owner, leaver, stayer);
    const leaving = await leaveHeldOpen(leaver, id);
    const fromLeaver = inFlight(send(leaver, id, 'on my way out'));
    const fromStayer = inFlight(send(stayer, id, 'meanwhile'));
    try {
      await eventually(async () => (fromLeaver.answered || fromStayer.answered ? true : (await waitingForLocks()) >= 2), {
        what: 'both posts wait for the leave',
      });
    } finally {
      await leaving.commit();
    }
    expect(await fromLeaver.answer).toEqual({ status: 404, body: { error: 'Conversation not found' } });
    const posted = await fromStayer.answer;
    expect(posted.status).toBe(201);
    expect(await contentsSeenBy(owner, id)).toEqual(['meanwhile']);
    const event = (await h.events('social.dm.created')).find((e) => (e.data.message as { id: string }).id === posted.body.id);
    expect(event?.data.participantIds).toEqual([owner.id, stayer.id].sort());
  });

  it('answers 400 for a 1:1 conversation and 404 for a stranger or an unknown id, and changes nothing', async () => {
    const [alice, bob, stranger] = [await h.addUser(), await h.addUser(), await h.addUser()];
    const pair = (await h.call(alice, 'POST', '/v1/dm/conversations', { userIds: [bob.id] })).body.id;
    const id = await group(alice, bob, await h.addUser());
    expect(await leave(alice, pair)).toEqual({ status: 400, body: { error: 'A direct conversation cannot be left' } });
    expect(await leave(stranger, id)).toEqual({ status: 404, body: { error: 'Conversation not found' } });
    expect((await leave(alice, crypto.randomUUID())).status).toBe(404);
    expect((await h.call(alice, 'DELETE', '/v1/dm/conversations/not-a-uuid/members/@me')).status).toBe(400);
    expect(
      Number((await rows('SELECT count(*) FROM conversation_participants WHERE conversation_id = ANY($1)', [[pair, id]]))[0].count),
    ).toBe(5);
  });
});
