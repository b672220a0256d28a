import { type ConsumerHandle, mediaRooms } from '@chat/kit';
import { joinRoom, lastAttempt, liveKitRooms, participantIn, type RoomParticipant, until, untilGone } from '@chat/testkit';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { consumeCallMedia } from '../src/bus/call-media.ts';
import { checkCallRooms } from '../src/domain/calls.ts';
import { createHarness } from './harness.ts';

/**
 * The call rooms on a real LiveKit (scripts/backing.sh starts one) follow the calls: a grant only
 * lets its holder connect, so social takes whoever leaves a call out of its room, and closes the
 * room of a call that ended.
 */

const h = await createHarness();
const rooms = liveKitRooms(inject('backing').livekit);
// The room API the consumer uses: what it took people out of is what the check of recent changes looks at.
const replicaRooms = mediaRooms(h.deps.config);
let consumer: ConsumerHandle | undefined;
const startConsumer = async () => {
  consumer = await consumeCallMedia({ ...h.runtime, rooms: replicaRooms });
};
beforeAll(startConsumer);
afterAll(async () => {
  await consumer?.stop();
  await h.close();
});

type User = Awaited<ReturnType<typeof h.addUser>>;

async function conversation(owner: User, ...others: User[]): Promise<string> {
  const res = await h.call(owner, 'POST', '/v1/dm/conversations', { userIds: others.map((o) => o.id) });
  expect([200, 201]).toContain(res.status);
  return res.body.id;
}

/** Connects the user to the call's room with the grant a start or an accept answered. */
async function connect(user: User, answer: { status: number; body: { id: string; grant: { url: string; token: string } } }) {
  expect(answer.status).toBeLessThan(300);
  const participant = await joinRoom(answer.body.grant);
  await until(() => participantIn(rooms, answer.body.id, user.id), { what: `${user.id} is in the call's room` });
  return participant;
}

const act = (user: User, callId: string, action: 'accept' | 'leave') => h.call(user, 'POST', `/v1/calls/${callId}/${action}`);
const inRoom = async (callId: string) => (await rooms.listParticipants(callId)).map((p) => p.identity).sort();

/** Waits until LiveKit lists exactly these in the call's room: a closed connection leaves the list a moment after its socket. */
async function roomHolds(callId: string, ...userIds: string[]) {
  const expected = userIds.sort();
  expect(
    await lastAttempt(
      () => inRoom(callId),
      (ids) => ids.join() === expected.join(),
    ),
  ).toEqual(expected);
}

/**
 * Waits until the room consumer applied every event of the call written so far (its start needs
 * nothing, and is not recorded). A test reconnects someone who left only after this: each event
 * takes out whoever has left by the time it is applied, so the accept's event, applied after the
 * leave, would take out the reconnected client too.
 */
async function untilApplied(callId: string) {
  const { rows } = await h.runtime.pool.query(
    "SELECT id FROM outbox WHERE subject <> 'social.call.created' AND payload->'data'->'call'->>'id' = $1",
    [callId],
  );
  const applied = async () =>
    (
      await h.runtime.pool.query(
        "SELECT count(*)::int AS n FROM processed_events WHERE consumer = 'social-call-media' AND event_id = ANY($1)",
        [rows.map((r) => r.id)],
      )
    ).rows[0].n === rows.length;
  await until(applied, { what: "the call's events are applied" });
}

/** A 1:1 call that alice started and bob accepted, both connected to its room with the grants they got. */
async function callWithBothIn() {
  const [alice, bob] = [await h.addUser(), await h.addUser()];
  const started = await h.call(alice, 'POST', `/v1/dm/conversations/${await conversation(alice, bob)}/call`);
  const callId: string = started.body.id;
  const aliceIn = await connect(alice, started);
  const accepted = await act(bob, callId, 'accept');
  return { alice, bob, callId, aliceIn, accepted, bobIn: await connect(bob, accepted) };
}

describe('call rooms follow the calls', () => {
  it('takes whoever hangs up out of the room, and closes it when the call ends', async () => {
    const { alice, bob, callId, aliceIn, bobIn } = await callWithBothIn();

    expect((await act(alice, callId, 'leave')).body.state).toBe('active');
    expect(await aliceIn.disconnected()).toBe(true);
    await roomHolds(callId, bob.id);

    expect((await act(bob, callId, 'leave')).body.state).toBe('ended');
    expect(await bobIn.disconnected()).toBe(true);
    await roomHolds(callId);
  });

  it('takes a member who leaves the group out of its call room, and one who blocks the other out of a 1:1 call', async () => {
    const [alice, bob, carol] = [await h.addUser(), await h.addUser(), await h.addUser()];
    const group = await conversation(alice, bob, carol);
    const started = await h.call(alice, 'POST', `/v1/dm/conversations/${group}/call`);
    const callId = started.body.id;
    const connected: RoomParticipant[] = [await connect(alice, started), await connect(bob, await act(bob, callId, 'accept'))];
    const carolIn = await connect(carol, await act(carol, callId, 'accept'));
    expect((await h.call(carol, 'DELETE', `/v1/dm/conversations/${group}/members/@me`)).status).toBe(204);
    expect(await carolIn.disconnected()).toBe(true);
    await roomHolds(callId, alice.id, bob.id);

    const direct = await h.call(alice, 'POST', `/v1/dm/conversations/${await conversation(alice, carol)}/call`);
    connected.push(await connect(alice, direct));
    const carolInDirect = await connect(carol, await act(carol, direct.body.id, 'accept'));
    expect((await h.call(carol, 'POST', '/v1/friends/block', { userId: alice.id })).status).toBe(201);
    expect(await carolInDirect.disconnected()).toBe(true);
    await roomHolds(direct.body.id, alice.id);
    for (const participant of connected) participant.leave();
  });

  it('the late event of an earlier hang-up does not take out someone who came back to the call', async () => {
    const { alice, bob, callId, aliceIn, bobIn } = await callWithBothIn();
    await consumer?.stop();
    expect((await act(bob, callId, 'leave')).status).toBe(200);
    bobIn.leave();
    await untilGone(rooms, callId, bob.id);
    const bobBack = await connect(bob, await act(bob, callId, 'accept'));
    // The hang-up's event is applied only now, after bob is back in the room.
    await startConsumer();
    await untilApplied(callId);
    await roomHolds(callId, alice.id, bob.id);
    aliceIn.leave();
    bobBack.leave();
  });
});

describe('the call room check', () => {
  it('takes out whoever connected again with a grant from before they left, and leaves those in the call', async () => {
    const { alice, bob, callId, aliceIn, accepted, bobIn } = await callWithBothIn();
    expect((await act(bob, callId, 'leave')).body.state).toBe('active');
    expect(await bobIn.disconnected()).toBe(true);
    await untilApplied(callId);
    await untilGone(rooms, callId, bob.id);
    // Bob's client kept its grant (or a token LiveKit refreshed for it), and connects again.
    const back = await connect(bob, accepted);

    expect(await checkCallRooms(mediaRooms(h.deps.config), h.runtime.pool)).toBeGreaterThanOrEqual(1);
    expect(await back.disconnected()).toBe(true);
    await roomHolds(callId, alice.id);
    aliceIn.leave();
  });

  it('of recent changes looks only at the rooms this replica took someone out of', async () => {
    const left = await callWithBothIn();
    expect((await act(left.bob, left.callId, 'leave')).body.state).toBe('active');
    expect(await left.bobIn.disconnected()).toBe(true);
    await untilApplied(left.callId);
    await untilGone(rooms, left.callId, left.bob.id);
    const back = await connect(left.bob, left.accepted);
    // The same in a call whose leave another replica applied: this one took nobody out of that room.
    const elsewhere = await callWithBothIn();
    await consumer?.stop();
    try {
      expect((await act(elsewhere.bob, elsewhere.callId, 'leave')).body.state).toBe('active');
      elsewhere.bobIn.leave();
      await untilGone(rooms, elsewhere.callId, elsewhere.bob.id);
      const strayBack = await connect(elsewhere.bob, elsewhere.accepted);

      expect(await checkCallRooms(replicaRooms, h.runtime.pool, { recentChanges: true })).toBeGreaterThanOrEqual(1);
      expect(await back.disconnected()).toBe(true);
      await roomHolds(left.callId, left.alice.id);
      await roomHolds(elsewhere.callId, elsewhere.alice.id, elsewhere.bob.id);
      strayBack.leave();
    } finally {
      await startConsumer();
    }
    left.aliceIn.leave();
    elsewhere.aliceIn.leave();
  });

  it('of recent changes closes again the room of a call whose group is gone, and the check of every room leaves such a room alone', async () => {
    const [alice, bob, carol] = [await h.addUser(), await h.addUser(), await h.addUser()];
    const group = await conversation(alice, bob, carol);
    const started = await h.call(alice, 'POST', `/v1/dm/conversations/${group}/call`);
    const callId: string = started.body.id;
    const aliceIn = await connect(alice, started);
    for (const user of [alice, bob, carol])
      expect((await h.call(user, 'DELETE', `/v1/dm/conversations/${group}/members/@me`)).status).toBe(204);
    expect(await aliceIn.disconnected()).toBe(true);
    // Only once the room is closed: LiveKit forgets a closed room's people a moment after it closes their sockets.
    await untilApplied(callId);
    // The group, and the call with it, are gone; alice's kept grant opens the room again.
    const back = await connect(alice, started);

    // A room named by no call could be anyone's (a voice channel's): the check of every room leaves it.
    await checkCallRooms(mediaRooms(h.deps.config), h.runtime.pool);
    await roomHolds(callId, alice.id);
    expect(await checkCallRooms(replicaRooms, h.runtime.pool, { recentChanges: true })).toBeGreaterThanOrEqual(1);
    expect(await back.disconnected()).toBe(true);
  });
});
