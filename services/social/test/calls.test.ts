import { countRoundTrips } from '@chat/testkit';
import { TokenVerifier } from 'livekit-server-sdk';
import { afterAll, describe, expect, it } from 'vitest';
import { callDeps } from '../src/app.ts';
import { endUnansweredCalls, leaveCall } from '../src/domain/calls.ts';
import { createHarness } from './harness.ts';

const h = await createHarness();
afterAll(() => h.close());

type User = Awaited<ReturnType<typeof h.addUser>>;
const verifier = new TokenVerifier('devkey', 'secret');

async function conversation(owner: User, ...others: User[]): Promise<string> {
  const res = await h.call(owner, 'POST', '/v1/dm/conversations', { userIds: others.map((o) => o.id) });
  expect([200, 201]).toContain(res.status);
  return res.body.id;
}
const ring = (user: User, conversationId: string) => h.call(user, 'POST', `/v1/dm/conversations/${conversationId}/call`);
const act = (user: User, callId: string, action: 'accept' | 'decline' | 'leave') => h.call(user, 'POST', `/v1/calls/${callId}/${action}`);
const leaveGroup = (user: User, conversationId: string) => h.call(user, 'DELETE', `/v1/dm/conversations/${conversationId}/members/@me`);
const callOf = async (user: User, callId: string) => (await h.call(user, 'GET', `/v1/calls/${callId}`)).body;
const participant = (call: { participants: { userId: string; state: string }[] }, user: User) =>
  call.participants.find((p) => p.userId === user.id)?.state;
const WAITING_FOR_A_LOCK = "SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'";
const eventsOf = async (callId: string) =>
  (await h.events())
    .filter((e) => e.subject.startsWith('social.call.') && (e.data.call as { id: string }).id === callId)
    .map((e) => e.subject);

describe('a 1:1 call', () => {
  it('rings, is answered, and ends when the last participant leaves, with a grant for its room', async () => {
    const [alice, bob] = [await h.addUser(), await h.addUser()];
    const id = await conversation(alice, bob);
    const started = await ring(alice, id);
    expect(started.status).toBe(201);
    expect(started.body).toMatchObject({ conversationId: id, initiatorId: alice.id, state: 'ringing', endedAt: null });
    expect(participant(started.body, alice)).toBe('joined');
    expect(participant(started.body, bob)).toBe('ringing');
    const aliceGrant = await verifier.verify(started.body.grant.token);
    expect(aliceGrant).toMatchObject({ sub: alice.id, video: { room: started.body.id, roomJoin: true, canPublish: true } });

    const accepted = await act(bob, started.body.id, 'accept');
    expect(accepted.status).toBe(200);
    expect(accepted.body).toMatchObject({ state: 'active', answeredAt: expect.any(String) });
    expect((await verifier.verify(accepted.body.grant.token)).sub).toBe(bob.id);

    expect((await act(alice, started.body.id, 'leave')).body).toMatchObject({ state: 'active' });
    const ended = await act(bob, started.body.id, 'leave');
    expect(ended.body).toMatchObject({ state: 'ended', endReason: 'completed', endedAt: expect.any(String) });
    expect(await eventsOf(started.body.id)).toEqual([
      'social.call.created',
      'social.call.updated',
      'social.call.updated',
      'social.call.ended',
    ]);
    expect((await act(bob, started.body.id, 'accept')).status).toBe(409);
  });

  it('ends as declined when the only one rung declines', async () => {
    const [alice, bob] = [await h.addUser(), await h.addUser()];
    const call = (await ring(alice, await conversation(alice, bob))).body;
    const declined = await act(bob, call.id, 'decline');
    expect(declined.body).toMatchObject({ state: 'ended', endReason: 'declined' });
    expect(participant(declined.body, bob)).toBe('declined');
    expect((await act(bob, call.id, 'decline')).status).toBe(409);
  });

  it('allows one live call per conversation: of two concurrent rings one is 201 and one is 409', async () => {
    const [alice, bob] = [await h.addUser(), await h.addUser()];
    const id = await conversation(alice, bob);
    const [a, b] = await Promise.all([ring(alice, id), ring(bob, id)]);
    expect([a.status, b.status].sort()).toEqual([201, 409]);
    expect([a, b].find((r) => r.status === 409)?.body).toEqual({ error: 'A call is already live in this conversation' });
    const live = await h.runtime.pool.query("SELECT count(*)::int AS n FROM calls WHERE conversation_id = $1 AND state <> 'ended'", [id]);
    expect(live.rows[0].n).toBe(1);
  });

  it('ends unanswered ringing as missed once its time is up, once across two clocks', async () => {
    const [alice, bob] = [await h.addUser(), await h.addUser()];
    const call = (await ring(alice, await conversation(alice, bob))).body;
    const deps = callDeps(h.deps);
    const before = new Date(Date.parse(call.createdAt) + 29_000);
    // Calls earlier tests left ringing may be due by then on a slow machine: a first round ends them.
    await endUnansweredCalls(deps, before);
    // Nothing due yet: one statement, no transaction.
    const quiet = await countRoundTrips(() => endUnansweredCalls(deps, before));
    expect(quiet.result).toBe(0);
    expect(quiet.statements).toHaveLength(1);
    const after = new Date(Date.parse(call.createdAt) + 31_000);
    await Promise.all([endUnansweredCalls(deps, after), endUnansweredCalls(deps, after)]);
    const state = (await h.call(alice, 'GET', `/v1/calls/${call.id}`)).body;
    expect(state).toMatchObject({ state: 'ended', endReason: 'missed' });
    expect((await eventsOf(call.id)).filter((s) => s === 'social.call.ended')).toHaveLength(1);
    // The conversation is free for a new call.
    expect((await ring(bob, call.conversationId)).status).toBe(201);
  });
});

describe('accepting', () => {
  it('gives the caller accepting their own ringing call a fresh grant and changes nothing: it still rings and ends as missed on time', async () => {
    const [alice, bob] = [await h.addUser(), await h.addUser()];
    const call = (await ring(alice, await conversation(alice, bob))).body;
    const again = await act(alice, call.id, 'accept');
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ state: 'ringing', answeredAt: null });
    expect((await verifier.verify(again.body.grant.token)).sub).toBe(alice.id);
    const ringing = await callOf(bob, call.id);
    expect(ringing).toMatchObject({ state: 'ringing', answeredAt: null });
    expect([participant(ringing, alice), participant(ringing, bob)]).toEqual(['joined', 'ringing']);

    await endUnansweredCalls(callDeps(h.deps), new Date(Date.parse(call.createdAt) + 31_000));
    expect(await callOf(bob, call.id)).toMatchObject({ state: 'ended', endReason: 'missed', answeredAt: null });
    expect(await eventsOf(call.id)).toEqual(['social.call.created', 'social.call.ended']);
  });

  it('gives someone accepting a call they are already in a fresh grant (to reconnect), and changes nothing', async () => {
    const [alice, bob] = [await h.addUser(), await h.addUser()];
    const call = (await ring(alice, await conversation(alice, bob))).body;
    expect((await act(bob, call.id, 'accept')).status).toBe(200);
    const before = await callOf(alice, call.id);
    const again = await act(bob, call.id, 'accept');
    expect(again.status).toBe(200);
    expect((await verifier.verify(again.body.grant.token)).sub).toBe(bob.id);
    expect(await callOf(alice, call.id)).toEqual(before);
    expect(await eventsOf(call.id)).toEqual(['social.call.created', 'social.call.updated']);
  });

  it('still lets someone who left rejoin a live call, with a new grant', async () => {
    const [alice, bob] = [await h.addUser(), await h.addUser()];
    const call = (await ring(alice, await conversation(alice, bob))).body;
    expect((await act(bob, call.id, 'accept')).status).toBe(200);
    expect((await act(alice, call.id, 'leave')).status).toBe(200);
    const back = await act(alice, call.id, 'accept');
    expect(back.status).toBe(200);
    expect(participant(back.body, alice)).toBe('joined');
    expect((await verifier.verify(back.body.grant.token)).sub).toBe(alice.id);
  });

  it('takes whoever blocks the other out of their live 1:1 call, as a hang-up, and refuses them rejoining it (403) with no grant', async () => {
    const [alice, bob] = [await h.addUser(), await h.addUser()];
    const call = (await ring(alice, await conversation(alice, bob))).body;
    expect((await act(bob, call.id, 'accept')).status).toBe(200);
    expect((await h.call(bob, 'POST', '/v1/friends/block', { userId: alice.id })).status).toBe(201);
    const after = await callOf(alice, call.id);
    expect(after).toMatchObject({ state: 'active', endedAt: null });
    expect(participant(after, bob)).toBe('left');
    expect(participant(after, alice)).toBe('joined');

    const back = await act(bob, call.id, 'accept');
    expect(back).toEqual({ status: 403, body: { error: 'You cannot call this user: one of you has blocked the other' } });
    expect(await callOf(alice, call.id)).toEqual(after);
    expect(await eventsOf(call.id)).toEqual(['social.call.created', 'social.call.updated', 'social.call.updated']);
    // The one left alone hangs up as usual.
    expect((await act(alice, call.id, 'leave')).body).toMatchObject({ state: 'ended', endReason: 'completed' });
  });

  it('ends a 1:1 call still ringing when either of the two blocks the other: declined by the one rung, missed by the caller', async () => {
    const [alice, bob, carol] = [await h.addUser(), await h.addUser(), await h.addUser()];
    const rungBlocks = (await ring(alice, await conversation(alice, bob))).body;
    expect((await h.call(bob, 'POST', '/v1/friends/block', { userId: alice.id })).status).toBe(201);
    const declined = await callOf(alice, rungBlocks.id);
    expect(declined).toMatchObject({ state: 'ended', endReason: 'declined' });
    expect(participant(declined, bob)).toBe('declined');
    expect(await eventsOf(rungBlocks.id)).toEqual(['social.call.created', 'social.call.ended']);

    const callerBlocks = (await ring(alice, await conversation(alice, carol))).body;
    expect((await h.call(alice, 'POST', '/v1/friends/block', { userId: carol.id })).status).toBe(201);
    const missed = await callOf(carol, callerBlocks.id);
    expect(missed).toMatchObject({ state: 'ended', endReason: 'missed' });
    expect(participant(missed, alice)).toBe('left');
    expect((await act(carol, callerBlocks.id, 'accept')).status).toBe(409);
    expect(await eventsOf(callerBlocks.id)).toEqual(['social.call.created', 'social.call.ended']);
  });
});

describe('a ring racing a block', () => {
  it('is refused (403) when the block commits while the ring waits for the conversation, and starts nothing', async () => {
    const [alice, bob] = [await h.addUser(), await h.addUser()];
    const id = await conversation(alice, bob);
    // What blockUser holds until it commits: the conversation's row, with the block written.
    const blocking = await h.runtime.pool.connect();
    try {
      await blocking.query('BEGIN');
      await blocking.query('SELECT 1 FROM conversations WHERE id = $1 FOR NO KEY UPDATE', [id]);
      await blocking.query('INSERT INTO blocks (blocker_id, blocked_id) VALUES ($1, $2)', [alice.id, bob.id]);
      const ringing = ring(bob, id);
      await expect.poll(async () => (await h.runtime.pool.query(WAITING_FOR_A_LOCK)).rowCount, { timeout: 5_000 }).toBeGreaterThan(0);
      await blocking.query('COMMIT');
      expect(await ringing).toEqual({ status: 403, body: { error: 'You cannot call this user: one of you has blocked the other' } });
    } finally {
      blocking.release();
    }
    const { rows } = await h.runtime.pool.query('SELECT count(*)::int AS n FROM calls WHERE conversation_id = $1', [id]);
    expect(rows[0].n).toBe(0);
  });
});

describe('a member leaving the group during a call', () => {
  it('leaves the call too: the call ends when the last one still in it leaves, and the group can ring again', async () => {
    const [alice, bob, carol] = [await h.addUser(), await h.addUser(), await h.addUser()];
    const id = await conversation(alice, bob, carol);
    const call = (await ring(alice, id)).body;
    expect((await act(bob, call.id, 'accept')).status).toBe(200);
    expect((await leaveGroup(bob, id)).status).toBe(204);
    const afterLeaving = await callOf(alice, call.id);
    expect(afterLeaving.state).toBe('active');
    expect(participant(afterLeaving, bob)).toBe('left');
    const updated = (await h.events('social.call.updated')).filter((e) => (e.data.call as { id: string }).id === call.id).at(-1);
    expect([...((updated?.data.participantIds as string[] | undefined) ?? [])].sort()).toEqual([alice.id, bob.id, carol.id].sort());

    const ended = await act(alice, call.id, 'leave');
    expect(ended.status).toBe(200);
    expect(ended.body).toMatchObject({ state: 'ended', endReason: 'completed' });
    expect(await eventsOf(call.id)).toEqual(['social.call.created', 'social.call.updated', 'social.call.updated', 'social.call.ended']);
    const next = await ring(carol, id);
    expect(next.status).toBe(201);
    expect(next.body).toMatchObject({ initiatorId: carol.id, state: 'ringing' });
  });

  it('ends the call when the last one in it leaves the group, with the leave’s event and message', async () => {
    const [alice, bob, carol] = [await h.addUser(), await h.addUser(), await h.addUser()];
    const id = await conversation(alice, bob, carol);
    const call = (await ring(alice, id)).body;
    expect((await act(bob, call.id, 'accept')).status).toBe(200);
    expect((await act(alice, call.id, 'leave')).status).toBe(200);
    expect((await leaveGroup(bob, id)).status).toBe(204);
    expect(await callOf(carol, call.id)).toMatchObject({ state: 'ended', endReason: 'completed' });
    const [last] = (await h.call(carol, 'GET', `/v1/dm/conversations/${id}/messages`)).body;
    expect(last).toMatchObject({ type: 'call_ended', senderId: alice.id, call: { id: call.id } });
    expect((await eventsOf(call.id)).at(-1)).toBe('social.call.ended');
    expect((await ring(carol, id)).status).toBe(201);
  });

  it('declines for a member still rung, and a caller leaving while it rings hangs up (missed)', async () => {
    const [alice, bob, carol] = [await h.addUser(), await h.addUser(), await h.addUser()];
    const declined = await conversation(alice, bob, carol);
    const rung = (await ring(alice, declined)).body;
    expect((await act(carol, rung.id, 'decline')).status).toBe(200);
    expect((await leaveGroup(bob, declined)).status).toBe(204);
    const afterDecline = await callOf(alice, rung.id);
    expect(afterDecline).toMatchObject({ state: 'ended', endReason: 'declined' });
    expect(participant(afterDecline, bob)).toBe('declined');

    const missed = await conversation(alice, bob, carol);
    const hungUp = (await ring(alice, missed)).body;
    expect((await leaveGroup(alice, missed)).status).toBe(204);
    expect(await callOf(bob, hungUp.id)).toMatchObject({ state: 'ended', endReason: 'missed' });
    expect(await eventsOf(hungUp.id)).toEqual(['social.call.created', 'social.call.ended']);
  });
});

describe('who may see and ring', () => {
  it('answers 404 to someone outside the conversation, for the call and for ringing', async () => {
    const [alice, bob, eve] = [await h.addUser(), await h.addUser(), await h.addUser()];
    const id = await conversation(alice, bob);
    const call = (await ring(alice, id)).body;
    for (const res of [await h.call(eve, 'GET', `/v1/calls/${call.id}`), await act(eve, call.id, 'accept'), await ring(eve, id)]) {
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: expect.any(String) });
    }
    expect(participant((await h.call(bob, 'GET', `/v1/calls/${call.id}`)).body, eve)).toBeUndefined();
  });

  it('refuses a ring across a block (403) and creates nothing', async () => {
    const [alice, bob] = [await h.addUser(), await h.addUser()];
    const id = await conversation(alice, bob);
    expect((await h.call(bob, 'POST', '/v1/friends/block', { userId: alice.id })).status).toBe(201);
    const res = await ring(alice, id);
    expect(res.status).toBe(403);
    expect(res.body.error).toMatch(/blocked/);
    const rows = await h.runtime.pool.query('SELECT count(*)::int AS n FROM calls WHERE conversation_id = $1', [id]);
    expect(rows.rows[0].n).toBe(0);
  });

  it('does not ring a group member who blocked the caller', async () => {
    const [alice, bob, carol] = [await h.addUser(), await h.addUser(), await h.addUser()];
    const id = await conversation(carol, alice, bob);
    expect((await h.call(bob, 'POST', '/v1/friends/block', { userId: alice.id })).status).toBe(201);
    const call = (await ring(alice, id)).body;
    expect(participant(call, carol)).toBe('ringing');
    expect(participant(call, bob)).toBeUndefined();
  });
});

describe('who hears of a call in a group with blocks', () => {
  const audiences = async (callId: string) =>
    (await h.events())
      .filter((e) => e.subject.startsWith('social.call.') && (e.data.call as { id: string }).id === callId)
      .map((e) => [...(e.data.participantIds as string[])].sort());

  it('leaves out whoever blocked the one acting, and whoever blocked the caller unless they joined', async () => {
    const [alice, bob, carol, dave] = [await h.addUser(), await h.addUser(), await h.addUser(), await h.addUser()];
    const id = await conversation(carol, alice, bob, dave);
    expect((await h.call(bob, 'POST', '/v1/friends/block', { userId: alice.id })).status).toBe(201);
    expect((await h.call(dave, 'POST', '/v1/friends/block', { userId: carol.id })).status).toBe(201);
    const call = (await ring(alice, id)).body;
    expect((await act(carol, call.id, 'accept')).status).toBe(200);
    expect((await act(dave, call.id, 'accept')).status).toBe(200);
    expect((await act(bob, call.id, 'accept')).status).toBe(200);
    expect(await audiences(call.id)).toEqual([
      [alice.id, carol.id, dave.id].sort(),
      [alice.id, carol.id].sort(),
      [alice.id, carol.id, dave.id].sort(),
      [alice.id, bob.id, carol.id, dave.id].sort(),
    ]);
  });
});

describe('a retried ring', () => {
  it('with the same Idempotency-Key answers the first call again and starts no second one', async () => {
    const [alice, bob] = [await h.addUser(), await h.addUser()];
    const id = await conversation(alice, bob);
    const headers = { authorization: `Bearer ${alice.token}`, 'idempotency-key': `ring-${id}` };
    const first = await h.app.inject({ method: 'POST', url: `/v1/dm/conversations/${id}/call`, headers });
    const retried = await h.app.inject({ method: 'POST', url: `/v1/dm/conversations/${id}/call`, headers });
    expect(first.statusCode).toBe(201);
    expect(retried.statusCode).toBe(201);
    expect(retried.json().id).toBe(first.json().id);
    const rows = await h.runtime.pool.query('SELECT count(*)::int AS n FROM calls WHERE conversation_id = $1', [id]);
    expect(rows.rows[0].n).toBe(1);
  });
});

describe('the messages a call leaves in its conversation', () => {
  const messagesOf = async (user: User, conversationId: string) =>
    (await h.call(user, 'GET', `/v1/dm/conversations/${conversationId}/messages`)).body as {
      id: string;
      type: string;
      senderId: string;
      content: string;
      call: { id: string; durationSeconds: number | null } | null;
    }[];
  const createdEventsOf = async (conversationId: string) =>
    (await h.events('social.dm.created'))
      .map((e) => e.data as { message: { conversationId: string; type: string; call: unknown }; participantIds: string[] })
      .filter((e) => e.message.conversationId === conversationId);

  it('posts call_started on ringing and call_ended with the duration from start to end, each a DM created event', async () => {
    const [alice, bob] = [await h.addUser(), await h.addUser()];
    const id = await conversation(alice, bob);
    const call = (await ring(alice, id)).body;
    const [started] = await messagesOf(bob, id);
    expect(started).toMatchObject({ type: 'call_started', senderId: alice.id, content: '', call: { id: call.id, durationSeconds: null } });
    expect((await act(bob, call.id, 'accept')).status).toBe(200);
    expect((await act(alice, call.id, 'leave')).status).toBe(200);
    // The last one out leaves 75.4 s after the ring, on the domain's own clock.
    const later = { ...callDeps(h.deps), now: () => new Date(Date.parse(call.createdAt) + 75_400) };
    const ended = await leaveCall(later, { userId: bob.id, requestId: 'test', log: h.deps.log }, call.id);
    expect(ended).toMatchObject({ state: 'ended', endReason: 'completed' });

    const messages = await messagesOf(alice, id);
    expect(messages.map((m) => m.type)).toEqual(['call_ended', 'call_started']);
    expect(messages[0]).toMatchObject({ senderId: alice.id, content: '', call: { id: call.id, durationSeconds: 75 } });
    const events = await createdEventsOf(id);
    expect(events.map((e) => [e.message.type, e.message.call, [...e.participantIds].sort()])).toEqual([
      ['call_started', { id: call.id, durationSeconds: null }, [alice.id, bob.id].sort()],
      ['call_ended', { id: call.id, durationSeconds: 75 }, [alice.id, bob.id].sort()],
    ]);
    const conv = (await h.call(bob, 'GET', `/v1/dm/conversations/${id}`)).body;
    expect(conv.lastMessage).toMatchObject({ id: messages[0]?.id, type: 'call_ended' });
  });

  it('posts call_missed when the ringing times out, once across two clocks, and when the one rung declines', async () => {
    const [alice, bob] = [await h.addUser(), await h.addUser()];
    const id = await conversation(alice, bob);
    const timedOut = (await ring(alice, id)).body;
    const after = new Date(Date.parse(timedOut.createdAt) + 31_000);
    await Promise.all([endUnansweredCalls(callDeps(h.deps), after), endUnansweredCalls(callDeps(h.deps), after)]);
    const declined = (await ring(bob, id)).body;
    expect((await act(alice, declined.id, 'decline')).status).toBe(200);

    const messages = (await messagesOf(alice, id)).map((m) => [m.type, m.senderId, m.call]);
    expect(messages).toEqual([
      ['call_missed', bob.id, { id: declined.id, durationSeconds: null }],
      ['call_started', bob.id, { id: declined.id, durationSeconds: null }],
      ['call_missed', alice.id, { id: timedOut.id, durationSeconds: null }],
      ['call_started', alice.id, { id: timedOut.id, durationSeconds: null }],
    ]);
    expect((await createdEventsOf(id)).map((e) => e.message.type)).toEqual(['call_started', 'call_missed', 'call_started', 'call_missed']);
  });

  it('answers 403 to the caller editing the call_started and call_missed they authored, and changes nothing', async () => {
    const [alice, bob] = [await h.addUser(), await h.addUser()];
    const id = await conversation(alice, bob);
    const call = (await ring(alice, id)).body;
    expect((await act(bob, call.id, 'decline')).status).toBe(200);
    const before = await messagesOf(alice, id);
    expect(before.map((m) => [m.type, m.senderId])).toEqual([
      ['call_missed', alice.id],
      ['call_started', alice.id],
    ]);

    for (const message of before) {
      const edited = await h.call(alice, 'PATCH', `/v1/dm/messages/${message.id}`, { content: 'free nitro at https://phish.test' });
      expect(edited).toEqual({ status: 403, body: { error: 'Cannot edit a system message' } });
    }
    expect(await messagesOf(bob, id)).toEqual(before);
    const stored = await h.runtime.pool.query('SELECT content, edited_at FROM direct_messages WHERE conversation_id = $1', [id]);
    expect(stored.rows).toEqual([
      { content: '', edited_at: null },
      { content: '', edited_at: null },
    ]);
    const updates = (await h.events('social.dm.updated')).filter(
      (e) => (e.data.message as { conversationId: string }).conversationId === id,
    );
    expect(updates).toEqual([]);
  });

  it('writes nothing when the ring is refused', async () => {
    const [alice, bob] = [await h.addUser(), await h.addUser()];
    const id = await conversation(alice, bob);
    expect((await ring(alice, id)).status).toBe(201);
    expect((await ring(bob, id)).status).toBe(409);
    expect((await messagesOf(alice, id)).map((m) => m.type)).toEqual(['call_started']);
  });
});

describe('the live call of a conversation', () => {
  it('is shown while it rings and is active, to every participant, in the conversation and the list, and null once ended', async () => {
    const [alice, bob] = [await h.addUser(), await h.addUser()];
    const id = await conversation(alice, bob);
    const get = async (user: User) => (await h.call(user, 'GET', `/v1/dm/conversations/${id}`)).body;
    const listed = async (user: User) =>
      ((await h.call(user, 'GET', '/v1/dm/conversations')).body as { id: string; call: unknown }[]).find((c) => c.id === id);
    expect((await get(alice)).call).toBeNull();
    const call = (await ring(alice, id)).body;
    expect((await get(bob)).call).toMatchObject({ id: call.id, state: 'ringing', initiatorId: alice.id });
    expect((await act(bob, call.id, 'accept')).status).toBe(200);
    expect((await get(alice)).call).toMatchObject({ id: call.id, state: 'active' });
    expect((await listed(bob))?.call).toMatchObject({ id: call.id, state: 'active' });
    await act(alice, call.id, 'leave');
    await act(bob, call.id, 'leave');
    expect((await get(alice)).call).toBeNull();
    expect((await listed(alice))?.call).toBeNull();
  });
});
