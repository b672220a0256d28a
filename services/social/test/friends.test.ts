import { STREAMS } from '@chat/contracts';
import { afterAll, describe, expect, it } from 'vitest';
import { createHarness, startPresenceStandIn } from './harness.ts';

const h = await createHarness();
afterAll(() => h.close());
const presence = await startPresenceStandIn(h.runtime);

const rows = async (sql: string, params: unknown[] = []) => (await h.runtime.pool.query(sql, params)).rows;
const requestsBetween = (a: string, b: string) =>
  rows('SELECT requester_id, recipient_id FROM friend_requests WHERE requester_id = ANY($1) AND recipient_id = ANY($1)', [[a, b]]);
const friendshipRows = (a: string, b: string) =>
  rows('SELECT user_id FROM friendships WHERE user_id = ANY($1) AND friend_id = ANY($1)', [[a, b]]);
const summary = (u: { id: string; username: string; displayName: string; avatarUrl: string | null }) => ({
  id: u.id,
  username: u.username,
  displayName: u.displayName,
  avatarUrl: u.avatarUrl,
  status: 'offline',
});

describe('friend requests', () => {
  it('sends a request by username (any case) and shows it to both sides as the spec entry', async () => {
    const alice = await h.addUser();
    const bob = await h.addUser({ avatarUrl: 'https://cdn.example/bob.png' });

    const res = await h.call(alice, 'POST', '/v1/friends/requests', { username: bob.username.toUpperCase() });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({ status: 'pending', user: summary(bob) });

    const outgoing = await h.call(alice, 'GET', '/v1/friends/requests');
    expect(outgoing.status).toBe(200);
    expect(outgoing.body).toEqual([{ user: summary(bob), direction: 'outgoing', createdAt: expect.any(String) }]);
    const incoming = await h.call(bob, 'GET', '/v1/friends/requests');
    expect(incoming.body).toEqual([{ user: summary(alice), direction: 'incoming', createdAt: outgoing.body[0].createdAt }]);

    expect(await requestsBetween(alice.id, bob.id)).toEqual([{ requester_id: alice.id, recipient_id: bob.id }]);
    const events = (await h.events('social.friend.requested')).filter((e) => e.data.requesterId === alice.id);
    expect(events).toEqual([
      {
        subject: 'social.friend.requested',
        data: {
          requesterId: alice.id,
          recipientId: bob.id,
          createdAt: expect.any(String),
          requester: summary(alice),
          recipient: summary(bob),
        },
      },
    ]);
  });

  it('lists pending requests of both directions by the other user’s id (the paging cursor)', async () => {
    const me = await h.addUser();
    const [a, b, c] = [await h.addUser(), await h.addUser(), await h.addUser()];
    await h.call(me, 'POST', '/v1/friends/requests', { userId: a.id });
    await h.call(b, 'POST', '/v1/friends/requests', { userId: me.id });
    await h.call(me, 'POST', '/v1/friends/requests', { userId: c.id });
    const res = await h.call(me, 'GET', '/v1/friends/requests');
    const expected = [
      [a.id, 'outgoing'],
      [b.id, 'incoming'],
      [c.id, 'outgoing'],
    ].sort((x, y) => (x[0]! < y[0]! ? -1 : 1));
    expect(res.body.map((e: { user: { id: string }; direction: string }) => [e.user.id, e.direction])).toEqual(expected);
  });

  it('makes friends at once when the other side had already asked', async () => {
    const alice = await h.addUser();
    const bob = await h.addUser();
    expect((await h.call(alice, 'POST', '/v1/friends/requests', { userId: bob.id })).status).toBe(201);

    const res = await h.call(bob, 'POST', '/v1/friends/requests', { userId: alice.id });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({ status: 'accepted', user: summary(alice) });
    expect(await requestsBetween(alice.id, bob.id)).toEqual([]);
    expect(await friendshipRows(alice.id, bob.id)).toHaveLength(2);
    const friends = await h.call(alice, 'GET', '/v1/friends');
    expect(friends.body).toEqual([{ user: summary(bob), createdAt: expect.any(String) }]);
    const accepted = (await h.events('social.friend.accepted')).filter((e) => e.data.requesterId === alice.id);
    expect(accepted).toEqual([
      {
        subject: 'social.friend.accepted',
        data: {
          requesterId: alice.id,
          recipientId: bob.id,
          createdAt: expect.any(String),
          requester: summary(alice),
          recipient: summary(bob),
        },
      },
    ]);
  });

  it('ends as one friendship when both ask each other at the same moment', async () => {
    const alice = await h.addUser();
    const bob = await h.addUser();
    const answers = await Promise.all([
      h.call(alice, 'POST', '/v1/friends/requests', { userId: bob.id }),
      h.call(bob, 'POST', '/v1/friends/requests', { userId: alice.id }),
    ]);
    expect(answers.map((a) => a.body.status).sort()).toEqual(['accepted', 'pending']);
    expect(await requestsBetween(alice.id, bob.id)).toEqual([]);
    expect(await friendshipRows(alice.id, bob.id)).toHaveLength(2);
  });

  it('answers 409 when already requested or already friends, and changes nothing', async () => {
    const alice = await h.addUser();
    const bob = await h.addUser();
    await h.call(alice, 'POST', '/v1/friends/requests', { userId: bob.id });
    const again = await h.call(alice, 'POST', '/v1/friends/requests', { username: bob.username });
    expect(again).toEqual({ status: 409, body: { error: expect.stringContaining('already sent') } });
    expect(await requestsBetween(alice.id, bob.id)).toHaveLength(1);

    await h.call(bob, 'POST', '/v1/friends/accept', { userId: alice.id });
    const friendsAlready = await h.call(bob, 'POST', '/v1/friends/requests', { userId: alice.id });
    expect(friendsAlready).toEqual({ status: 409, body: { error: 'You are already friends' } });
    expect(await requestsBetween(alice.id, bob.id)).toEqual([]);
  });

  it('answers 400 for yourself, 404 for an unknown user, 400 for a malformed body, 401 without a token', async () => {
    const me = await h.addUser();
    expect(await h.call(me, 'POST', '/v1/friends/requests', { userId: me.id })).toEqual({ status: 400, body: { error: 'That is you' } });
    expect((await h.call(me, 'POST', '/v1/friends/requests', { username: me.username })).status).toBe(400);
    expect(await h.call(me, 'POST', '/v1/friends/requests', { userId: crypto.randomUUID() })).toEqual({
      status: 404,
      body: { error: 'User not found' },
    });
    expect((await h.call(me, 'POST', '/v1/friends/requests', { username: 'nobody_here' })).status).toBe(404);
    const both = await h.call(me, 'POST', '/v1/friends/requests', { username: 'x', userId: crypto.randomUUID() });
    expect(both).toEqual({ status: 400, body: { error: expect.stringContaining('exactly one') } });
    expect((await h.call(me, 'POST', '/v1/friends/requests', {})).status).toBe(400);
    expect((await h.call(me, 'POST', '/v1/friends/requests', { userId: 'not-a-uuid' })).status).toBe(400);
    expect((await h.call(undefined, 'POST', '/v1/friends/requests', { userId: me.id })).status).toBe(401);
    expect(await rows('SELECT 1 FROM friend_requests WHERE requester_id = $1', [me.id])).toEqual([]);
  });
});

describe('accept, decline, cancel, unfriend', () => {
  it('accepts an incoming request, and only an incoming one', async () => {
    const alice = await h.addUser();
    const bob = await h.addUser();
    await h.call(alice, 'POST', '/v1/friends/requests', { userId: bob.id });
    expect(await h.call(alice, 'POST', '/v1/friends/accept', { userId: bob.id })).toEqual({
      status: 404,
      body: { error: 'Friend request not found' },
    });
    const res = await h.call(bob, 'POST', '/v1/friends/accept', { userId: alice.id });
    expect(res).toEqual({ status: 200, body: { user: summary(alice), createdAt: expect.any(String) } });
    expect((await h.call(bob, 'GET', '/v1/friends')).body).toEqual([{ user: summary(alice), createdAt: res.body.createdAt }]);
    expect((await h.call(bob, 'POST', '/v1/friends/accept', { userId: alice.id })).status).toBe(404);
  });

  it('declines an incoming request', async () => {
    const alice = await h.addUser();
    const bob = await h.addUser();
    await h.call(alice, 'POST', '/v1/friends/requests', { userId: bob.id });
    expect(await h.call(bob, 'POST', '/v1/friends/decline', { userId: alice.id })).toEqual({ status: 204, body: undefined });
    expect(await requestsBetween(alice.id, bob.id)).toEqual([]);
    expect((await h.call(alice, 'GET', '/v1/friends/requests')).body).toEqual([]);
    expect((await h.call(bob, 'POST', '/v1/friends/decline', { userId: alice.id })).status).toBe(404);
    const removed = (await h.events('social.friend.removed')).filter((e) => e.data.userId === bob.id);
    expect(removed.map((e) => e.data)).toEqual([
      { userId: bob.id, otherUserId: alice.id, relation: 'request', reason: 'declined', user: summary(bob), otherUser: summary(alice) },
    ]);
  });

  it('cancels an outgoing request, and answers 404 when there is none', async () => {
    const alice = await h.addUser();
    const bob = await h.addUser();
    await h.call(alice, 'POST', '/v1/friends/requests', { userId: bob.id });
    expect(await h.call(bob, 'POST', '/v1/friends/cancel', { userId: alice.id })).toEqual({
      status: 404,
      body: { error: 'Friend request not found' },
    });
    expect(await requestsBetween(alice.id, bob.id)).toHaveLength(1);
    expect((await h.call(alice, 'POST', '/v1/friends/cancel', { userId: bob.id })).status).toBe(204);
    expect(await requestsBetween(alice.id, bob.id)).toEqual([]);
    expect((await h.call(alice, 'POST', '/v1/friends/cancel', { userId: bob.id })).status).toBe(404);
  });

  it('unfriends both ways', async () => {
    const alice = await h.addUser();
    const bob = await h.addUser();
    await h.call(alice, 'POST', '/v1/friends/requests', { userId: bob.id });
    await h.call(bob, 'POST', '/v1/friends/accept', { userId: alice.id });
    expect((await h.call(bob, 'DELETE', `/v1/friends/${alice.id}`)).status).toBe(204);
    expect(await friendshipRows(alice.id, bob.id)).toEqual([]);
    expect((await h.call(alice, 'GET', '/v1/friends')).body).toEqual([]);
    expect(await h.call(bob, 'DELETE', `/v1/friends/${alice.id}`)).toEqual({ status: 404, body: { error: 'Friend not found' } });
    expect((await h.call(bob, 'DELETE', '/v1/friends/not-a-uuid')).status).toBe(400);
  });
});

describe('blocks', () => {
  it('removes the friendship and pending requests both ways, and lists the block', async () => {
    const alice = await h.addUser();
    const bob = await h.addUser();
    const carol = await h.addUser();
    await h.call(alice, 'POST', '/v1/friends/requests', { userId: bob.id });
    await h.call(bob, 'POST', '/v1/friends/accept', { userId: alice.id });
    await h.call(carol, 'POST', '/v1/friends/requests', { userId: alice.id });

    const blocked = await h.call(alice, 'POST', '/v1/friends/block', { userId: bob.id });
    expect(blocked).toEqual({ status: 201, body: { user: summary(bob), createdAt: expect.any(String) } });
    expect((await h.call(alice, 'POST', '/v1/friends/block', { userId: carol.id })).status).toBe(201);

    expect(await friendshipRows(alice.id, bob.id)).toEqual([]);
    expect(await requestsBetween(alice.id, carol.id)).toEqual([]);
    expect((await h.call(alice, 'GET', '/v1/friends')).body).toEqual([]);
    expect((await h.call(alice, 'GET', '/v1/friends/blocked')).body.map((b: { user: { id: string } }) => b.user.id)).toEqual(
      [carol.id, bob.id].sort(),
    );
    const subjects = (await h.events())
      .filter((e) => e.data.userId === alice.id && e.subject !== 'social.friend.requested')
      .map((e) => [e.subject, e.data.otherUserId ?? e.data.blockedUserId, e.data.reason]);
    expect(subjects).toEqual([
      ['social.friend.removed', bob.id, 'blocked'],
      ['social.block.created', bob.id, undefined],
      ['social.friend.removed', carol.id, 'blocked'],
      ['social.block.created', carol.id, undefined],
    ]);
  });

  it('answers a blocked user like an unknown one, and the blocker with 403', async () => {
    const alice = await h.addUser();
    const bob = await h.addUser();
    await h.call(alice, 'POST', '/v1/friends/block', { userId: bob.id });
    expect(await h.call(bob, 'POST', '/v1/friends/requests', { userId: alice.id })).toEqual({
      status: 404,
      body: { error: 'User not found' },
    });
    expect((await h.call(bob, 'POST', '/v1/friends/requests', { username: alice.username })).status).toBe(404);
    expect((await h.call(alice, 'POST', '/v1/friends/requests', { userId: bob.id })).status).toBe(403);
    expect(await requestsBetween(alice.id, bob.id)).toEqual([]);
  });

  it('answers 409 for a second block, 400 for yourself, 404 for an unknown user; unblocks once', async () => {
    const alice = await h.addUser();
    const bob = await h.addUser();
    await h.call(alice, 'POST', '/v1/friends/block', { userId: bob.id });
    expect(await h.call(alice, 'POST', '/v1/friends/block', { userId: bob.id })).toEqual({
      status: 409,
      body: { error: 'You have already blocked this user' },
    });
    expect((await h.call(alice, 'POST', '/v1/friends/block', { userId: alice.id })).status).toBe(400);
    expect((await h.call(alice, 'POST', '/v1/friends/block', { userId: crypto.randomUUID() })).status).toBe(404);

    expect((await h.call(alice, 'DELETE', `/v1/friends/block/${bob.id}`)).status).toBe(204);
    expect(await rows('SELECT 1 FROM blocks WHERE blocker_id = $1', [alice.id])).toEqual([]);
    expect(await h.call(alice, 'DELETE', `/v1/friends/block/${bob.id}`)).toEqual({ status: 404, body: { error: 'Block not found' } });
    expect((await h.call(bob, 'POST', '/v1/friends/requests', { userId: alice.id })).status).toBe(201);
    const unblocked = (await h.events('social.block.removed')).filter((e) => e.data.userId === alice.id);
    expect(unblocked.map((e) => e.data)).toEqual([
      { userId: alice.id, blockedUserId: bob.id, blockedUser: summary(bob), createdAt: expect.any(String) },
    ]);
  });
});

describe('statuses in the lists (what the gateway answers)', () => {
  const asSeen = (u: Parameters<typeof summary>[0], status: string) => ({ ...summary(u), status });

  it('a friend request between strangers shows each side as the gateway shows them to the caller, in the answer and both lists', async () => {
    const [alice, bob] = [await h.addUser(), await h.addUser()];
    presence.live.set(alice.id, 'online');
    presence.live.set(bob.id, 'dnd');
    const asked = presence.questions.length;

    const sent = await h.call(alice, 'POST', '/v1/friends/requests', { userId: bob.id });
    expect(sent).toEqual({ status: 201, body: { status: 'pending', user: summary(bob) } });
    const outgoing = await h.call(alice, 'GET', '/v1/friends/requests');
    expect(outgoing).toEqual({ status: 200, body: [{ user: summary(bob), direction: 'outgoing', createdAt: expect.any(String) }] });
    const incoming = await h.call(bob, 'GET', '/v1/friends/requests');
    expect(incoming).toEqual({ status: 200, body: [{ user: summary(alice), direction: 'incoming', createdAt: expect.any(String) }] });
    expect(presence.questions.slice(asked)).toEqual([
      { userIds: [bob.id], viewerId: alice.id },
      { userIds: [bob.id], viewerId: alice.id },
      { userIds: [alice.id], viewerId: bob.id },
    ]);
    expect(await requestsBetween(alice.id, bob.id)).toEqual([{ requester_id: alice.id, recipient_id: bob.id }]);

    // In a server together, the gateway shows each the other's live status: the lists show its answer.
    presence.acquaint(alice.id, bob.id);
    expect((await h.call(alice, 'GET', '/v1/friends/requests')).body[0].user).toEqual(asSeen(bob, 'dnd'));
    expect((await h.call(bob, 'GET', '/v1/friends/requests')).body[0].user).toEqual(asSeen(alice, 'online'));
  });

  it('the blocked list shows a blocked stranger as the gateway shows them to the blocker', async () => {
    const [carol, dave] = [await h.addUser(), await h.addUser()];
    presence.live.set(dave.id, 'idle');
    const blocked = await h.call(carol, 'POST', '/v1/friends/block', { userId: dave.id });
    expect(blocked).toEqual({ status: 201, body: { user: summary(dave), createdAt: expect.any(String) } });
    const asked = presence.questions.length;

    const list = await h.call(carol, 'GET', '/v1/friends/blocked');
    expect(list).toEqual({ status: 200, body: [{ user: summary(dave), createdAt: blocked.body.createdAt }] });
    expect(presence.questions.slice(asked)).toEqual([{ userIds: [dave.id], viewerId: carol.id }]);
    expect(await rows('SELECT blocked_id FROM blocks WHERE blocker_id = $1', [carol.id])).toEqual([{ blocked_id: dave.id }]);

    presence.acquaint(carol.id, dave.id);
    expect((await h.call(carol, 'GET', '/v1/friends/blocked')).body[0].user).toEqual(asSeen(dave, 'idle'));
  });

  it('the friend list and an accept show friends live, asking without a viewer (a friend is never a stranger)', async () => {
    const [erin, frank] = [await h.addUser(), await h.addUser()];
    presence.live.set(erin.id, 'online');
    presence.live.set(frank.id, 'dnd');
    expect((await h.call(erin, 'POST', '/v1/friends/requests', { userId: frank.id })).status).toBe(201);
    const asked = presence.questions.length;

    const accepted = await h.call(frank, 'POST', '/v1/friends/accept', { userId: erin.id });
    expect(accepted).toEqual({ status: 200, body: { user: asSeen(erin, 'online'), createdAt: expect.any(String) } });
    const friends = await h.call(erin, 'GET', '/v1/friends');
    expect(friends).toEqual({ status: 200, body: [{ user: asSeen(frank, 'dnd'), createdAt: accepted.body.createdAt }] });
    expect(presence.questions.slice(asked)).toEqual([{ userIds: [erin.id] }, { userIds: [frank.id] }]);
    expect(await friendshipRows(erin.id, frank.id)).toHaveLength(2);
  });
});

describe('events', () => {
  it('reach the SOCIAL stream through the outbox relay', async () => {
    const alice = await h.addUser();
    const bob = await h.addUser();
    await h.call(alice, 'POST', '/v1/friends/requests', { userId: bob.id });
    await h.runtime.relay.flush();
    const msg = await h.runtime.bus.jsm.streams.getMessage(h.runtime.bus.name(STREAMS.social.name), {
      last_by_subj: h.runtime.bus.subject('social.friend.requested'),
    });
    expect(msg?.json<{ data: unknown }>().data).toEqual({
      requesterId: alice.id,
      recipientId: bob.id,
      createdAt: expect.any(String),
      requester: summary(alice),
      recipient: summary(bob),
    });
  });
});
