import { TokenVerifier } from 'livekit-server-sdk';
import { afterAll, describe, expect, it } from 'vitest';
import { callDeps } from '../src/app.ts';
import { endUnansweredCalls } from '../src/domain/calls.ts';
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
const participant = (call: { participants: { userId: string; state: string }[] }, user: User) =>
  call.participants.find((p) => p.userId === user.id)?.state;
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
    expect(await endUnansweredCalls(deps, before)).toBe(0);
    const after = new Date(Date.parse(call.createdAt) + 31_000);
    await Promise.all([endUnansweredCalls(deps, after), endUnansweredCalls(deps, after)]);
    const state = (await h.call(alice, 'GET', `/v1/calls/${call.id}`)).body;
    expect(state).toMatchObject({ state: 'ended', endReason: 'missed' });
    expect((await eventsOf(call.id)).filter((s) => s === 'social.call.ended')).toHaveLength(1);
    // The conversation is free for a new call.
    expect((await ring(bob, call.conversationId)).status).toBe(201);
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
