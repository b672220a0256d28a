import { afterAll, describe, expect, it } from 'vitest';
import { callDeps } from '../src/app.ts';
import { endUnansweredCalls } from '../src/domain/calls.ts';
import { createHarness } from './harness.ts';

/** A group call answered by one: the ring of the others still ends on time, as missed. */

const h = await createHarness();
afterAll(() => h.close());

type User = Awaited<ReturnType<typeof h.addUser>>;

const act = (user: User, callId: string, action: 'accept' | 'decline' | 'leave') => h.call(user, 'POST', `/v1/calls/${callId}/${action}`);
const callOf = async (user: User, callId: string) => (await h.call(user, 'GET', `/v1/calls/${callId}`)).body;
const stateOf = (call: { participants: { userId: string; state: string }[] }, user: User) =>
  call.participants.find((p) => p.userId === user.id)?.state;
const callEventsOf = async (callId: string) =>
  (await h.events()).filter((e) => e.subject.startsWith('social.call.') && (e.data.call as { id: string }).id === callId);
const missedCalls = async (user: User) =>
  ((await h.call(user, 'GET', '/v1/notifications')).body.notifications as { kind: string; callId: string; createdAt: string }[]).filter(
    (n) => n.kind === 'missed_call',
  );

describe('ringing in an answered group call', () => {
  it('stops after the ring timeout for those who did not answer: declined, a CALL_UPDATE, their missed_call entry', async () => {
    const [alice, bob, carol] = [await h.addUser(), await h.addUser(), await h.addUser()];
    const conversation = (await h.call(alice, 'POST', '/v1/dm/conversations', { userIds: [bob.id, carol.id] })).body.id;
    const call = (await h.call(alice, 'POST', `/v1/dm/conversations/${conversation}/call`)).body;
    expect((await act(bob, call.id, 'accept')).status).toBe(200);
    const deps = callDeps(h.deps);

    // Before its time, nothing changes.
    await endUnansweredCalls(deps, new Date(Date.parse(call.createdAt) + 29_000));
    expect(stateOf(await callOf(alice, call.id), carol)).toBe('ringing');

    const after = new Date(Date.parse(call.createdAt) + 31_000);
    await Promise.all([endUnansweredCalls(deps, after), endUnansweredCalls(deps, after)]);
    const now = await callOf(alice, call.id);
    expect(now).toMatchObject({ state: 'active', endedAt: null });
    expect([stateOf(now, alice), stateOf(now, bob), stateOf(now, carol)]).toEqual(['joined', 'joined', 'declined']);
    const events = await callEventsOf(call.id);
    expect(events.map((e) => e.subject)).toEqual(['social.call.created', 'social.call.updated', 'social.call.updated']);
    expect(events[2]?.data).toEqual({ call: now, participantIds: expect.arrayContaining([alice.id, bob.id, carol.id]) });
    // Dated when her ring stopped, as a missed call that ends is dated at its end (not when it started ringing).
    expect(await missedCalls(carol)).toEqual([expect.objectContaining({ callId: call.id, createdAt: after.toISOString() })]);
    expect([await missedCalls(alice), await missedCalls(bob)]).toEqual([[], []]);

    // Done once: a later round finds nothing; carol may still join, and the call ends as completed.
    expect(await endUnansweredCalls(deps, new Date(after.getTime() + 60_000))).toBe(0);
    expect((await act(carol, call.id, 'accept')).body).toMatchObject({ state: 'active' });
    for (const u of [alice, bob]) expect((await act(u, call.id, 'leave')).status).toBe(200);
    expect((await act(carol, call.id, 'leave')).body).toMatchObject({ state: 'ended', endReason: 'completed' });
    expect(await missedCalls(carol)).toHaveLength(1);
  });
});
