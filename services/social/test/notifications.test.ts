import { READ_STATE_SUBJECTS } from '@chat/contracts';
import { v7 as uuidv7 } from 'uuid';
import { beforeAll, describe, expect, it } from 'vitest';
import { READ_STATE_CONSUMERS } from '../src/bus/read-states.ts';
import { eventually } from './harness.ts';
import { readStatesHarness } from './read-state-fixtures.ts';

/**
 * Issue 19: the notification feed, built from events only: social's own friend, message and call
 * events (through the real outbox, relay and SOCIAL stream) and guilds' join-request decisions and
 * resolved mentions (published here on the GUILDS stream, as guilds' relay would).
 */
const { h, rs } = await readStatesHarness();

type User = Awaited<ReturnType<typeof h.addUser>>;
type Entry = { id: string; kind: string; actorId: string | null; read: boolean } & Record<string, unknown>;

const feed = async (user: User, query = '') => {
  const res = await h.call(user, 'GET', `/v1/notifications${query}`);
  expect(res.status).toBe(200);
  return res.body as { unreadCount: number; lastReadId: string | null; notifications: Entry[] };
};
/** Waits until the user's feed holds `count` entries. */
const feedOf = async (user: User, count: number) => {
  await eventually(async () => (await feed(user)).notifications.length >= count);
  return feed(user);
};
const applied = (event: { id: string }) =>
  eventually(async () => (await h.runtime.pool.query('SELECT 1 FROM processed_events WHERE event_id = $1', [event.id])).rowCount === 1);

function joinRequest(user: User, status: 'approved' | 'rejected', reviewer: string | null, serverId: string) {
  const at = new Date().toISOString();
  return { id: uuidv7(), serverId, userId: user.id, message: null, status, reviewedBy: reviewer, reviewedAt: at, createdAt: at };
}

let alice: User;
let bob: User;
beforeAll(async () => {
  [alice, bob] = [await h.addUser(), await h.addUser()];
});

describe('entries from events', () => {
  it('tells the recipient of a friend request and the requester of the accept', async () => {
    const [ann, ben] = [await h.addUser(), await h.addUser()];
    expect((await h.call(ann, 'POST', '/v1/friends/requests', { userId: ben.id })).status).toBe(201);
    const request = (await feedOf(ben, 1)).notifications[0];
    expect(request).toMatchObject({ kind: 'friend_request', actorId: ann.id, read: false, serverId: null, messageId: null });
    expect((await h.call(ben, 'POST', '/v1/friends/accept', { userId: ann.id })).status).toBe(200);
    const accepted = await feedOf(ann, 1);
    expect(accepted.notifications.map((n) => [n.kind, n.actorId])).toEqual([['friend_accept', ben.id]]);
    expect(accepted.unreadCount).toBe(1);
    // Each entry is announced to its user (NOTIFICATION_CREATE on the socket).
    const announced = (await h.events(READ_STATE_SUBJECTS.notificationCreated)).map((e) => e.data);
    expect(announced).toContainEqual({ notification: request, userIds: [ben.id] });
  });

  it('keeps one entry for a pending friend request and none once it is cancelled or declined, however late the events apply', async () => {
    const [ann, ben] = [await h.addUser(), await h.addUser()];
    // The feed's consumer is held back: its events arrive after the cancels (and the last request).
    await rs.stop('friends');
    for (let i = 0; i < 5; i++) {
      expect((await h.call(ann, 'POST', '/v1/friends/requests', { userId: ben.id })).status).toBe(201);
      expect((await h.call(ann, 'POST', '/v1/friends/cancel', { userId: ben.id })).status).toBe(204);
    }
    expect((await h.call(ann, 'POST', '/v1/friends/requests', { userId: ben.id })).status).toBe(201);
    await rs.start('friends');
    const { bus } = h.runtime;
    const { stream, durable } = READ_STATE_CONSUMERS.friends;
    await eventually(async () => {
      const info = await bus.jsm.consumers.info(bus.name(stream.name), bus.name(durable));
      return info.num_pending === 0 && info.num_ack_pending === 0 && (await feed(ben)).notifications.length > 0;
    });
    const pending = await feed(ben);
    expect(pending.notifications.map((n) => [n.kind, n.actorId])).toEqual([['friend_request', ann.id]]);
    expect(pending.unreadCount).toBe(1);

    expect((await h.call(ben, 'POST', '/v1/friends/decline', { userId: ann.id })).status).toBe(204);
    expect(await feed(ben)).toMatchObject({ notifications: [], unreadCount: 0 });
  });

  it('tells the requester of a join-request approval and rejection (guilds events)', async () => {
    const ann = await h.addUser();
    const [serverA, serverB, reviewer] = [uuidv7(), uuidv7(), uuidv7()];
    await applied(await rs.publish('guilds.joinrequest.reviewed', joinRequest(ann, 'approved', reviewer, serverA)));
    await applied(await rs.publish('guilds.joinrequest.reviewed', joinRequest(ann, 'rejected', reviewer, serverB)));
    const { notifications } = await feed(ann);
    expect(notifications.map((n) => [n.kind, n.serverId, n.actorId])).toEqual([
      ['join_request_rejected', serverB, reviewer],
      ['join_request_approved', serverA, reviewer],
    ]);
  });

  it('tells nothing of a request settled by the requester joining another way (approved with no reviewer)', async () => {
    const ann = await h.addUser();
    const [viaInvite, reviewed, reviewer] = [uuidv7(), uuidv7(), uuidv7()];
    await applied(await rs.publish('guilds.joinrequest.reviewed', joinRequest(ann, 'approved', null, viaInvite)));
    await applied(await rs.publish('guilds.joinrequest.reviewed', joinRequest(ann, 'approved', reviewer, reviewed)));
    const { notifications } = await feed(ann);
    expect(notifications.map((n) => [n.kind, n.serverId])).toEqual([['join_request_approved', reviewed]]);
  });

  it('tells the author of a direct message that was replied to, with an excerpt', async () => {
    const id = (await h.call(alice, 'POST', '/v1/dm/conversations', { userIds: [bob.id] })).body.id;
    const original = await h.call(alice, 'POST', '/v1/dm/messages', { conversationId: id, content: 'question?' });
    const reply = await h.call(bob, 'POST', '/v1/dm/messages', {
      conversationId: id,
      content: 'answer\n  here',
      replyToId: original.body.id,
    });
    expect(reply.status).toBe(201);
    await eventually(async () => (await feed(alice)).notifications.some((n) => n.messageId === reply.body.id));
    const entry = (await feed(alice)).notifications.find((n) => n.messageId === reply.body.id);
    expect(entry).toMatchObject({ kind: 'dm_reply', actorId: bob.id, conversationId: id, excerpt: 'answer here', channelId: null });
    // Deleting the reply takes it out of the feed.
    expect((await h.call(bob, 'DELETE', `/v1/dm/messages/${reply.body.id}`)).status).toBe(204);
    await eventually(async () => !(await feed(alice)).notifications.some((n) => n.messageId === reply.body.id));
  });

  it('tells whoever was still rung of a missed call', async () => {
    const [ann, ben] = [await h.addUser(), await h.addUser()];
    const id = (await h.call(ann, 'POST', '/v1/dm/conversations', { userIds: [ben.id] })).body.id;
    const call = await h.call(ann, 'POST', `/v1/dm/conversations/${id}/call`);
    expect(call.status).toBe(201);
    expect((await h.call(ann, 'POST', `/v1/calls/${call.body.id}/leave`)).body).toMatchObject({ state: 'ended', endReason: 'missed' });
    const { notifications } = await feedOf(ben, 1);
    expect(notifications[0]).toMatchObject({ kind: 'missed_call', actorId: ann.id, conversationId: id, callId: call.body.id });
    expect((await feed(ann)).notifications).toEqual([]);
  });

  it('enters a channel mention with server, channel and message ids and the excerpt, once for all users of the batch', async () => {
    const [ann, ben] = [await h.addUser(), await h.addUser()];
    const [serverId, channelId, messageId] = [uuidv7(), uuidv7(), uuidv7()];
    const batch = {
      messageId,
      channelId,
      serverId,
      authorId: bob.id,
      via: 'everyone',
      excerpt: 'big news',
      createdAt: new Date().toISOString(),
    };
    await applied(await rs.publish(READ_STATE_SUBJECTS.messageMentioned, { ...batch, userIds: [ann.id, ben.id] }));
    const [annEntry] = (await feed(ann)).notifications;
    expect(annEntry).toMatchObject({
      kind: 'mention',
      via: 'everyone',
      serverId,
      channelId,
      messageId,
      actorId: bob.id,
      excerpt: 'big news',
    });
    expect((await feed(ben)).notifications[0]).toEqual(annEntry);
    const reply = { ...batch, messageId: uuidv7(), via: 'reply', userIds: [ann.id] };
    await applied(await rs.publish(READ_STATE_SUBJECTS.messageMentioned, reply));
    expect((await feed(ann)).notifications[0]).toMatchObject({ kind: 'reply', via: null, messageId: reply.messageId });
  });
});

describe('the feed', () => {
  it('is newest first, pages with before and limit, counts unread and acks only forwards', async () => {
    const ann = await h.addUser();
    const serverId = uuidv7();
    for (let i = 0; i < 5; i++) {
      await applied(await rs.publish('guilds.joinrequest.reviewed', joinRequest(ann, i % 2 ? 'rejected' : 'approved', uuidv7(), serverId)));
    }
    const all = await feed(ann);
    expect(all.unreadCount).toBe(5);
    expect(all.lastReadId).toBeNull();
    const ids = all.notifications.map((n) => n.id);
    expect(ids).toEqual([...ids].sort().reverse());

    const first = await feed(ann, '?limit=2');
    expect(first.notifications.map((n) => n.id)).toEqual(ids.slice(0, 2));
    const second = await feed(ann, `?limit=2&before=${ids[1]}`);
    expect(second.notifications.map((n) => n.id)).toEqual(ids.slice(2, 4));
    const last = await feed(ann, `?limit=2&before=${ids[3]}`);
    expect(last.notifications.map((n) => n.id)).toEqual(ids.slice(4));

    const acked = await h.call(ann, 'POST', '/v1/notifications/ack', { until: ids[2] });
    expect(acked.status).toBe(200);
    expect(acked.body).toEqual({ unreadCount: 2, lastReadId: ids[2] });
    const after = await feed(ann);
    expect(after.notifications.map((n) => n.read)).toEqual([false, false, true, true, true]);
    const back = await h.call(ann, 'POST', '/v1/notifications/ack', { until: ids[4] });
    expect(back.body).toEqual({ unreadCount: 2, lastReadId: ids[2] });
    // Past the newest entry a mark would hide every later one: refused, and nothing moves.
    const beyond = await h.call(ann, 'POST', '/v1/notifications/ack', { until: 'ffffffff-ffff-7fff-bfff-ffffffffffff' });
    expect({ status: beyond.status, body: beyond.body }).toEqual({ status: 404, body: { error: 'Notification not found' } });
    expect((await feed(ann)).unreadCount).toBe(2);
  });

  it('answers 400 naming the field for a bad query or body, 401 without a token', async () => {
    for (const query of ['?limit=0', '?limit=101', '?before=nope']) {
      const res = await h.call(alice, 'GET', `/v1/notifications${query}`);
      expect(res.status, query).toBe(400);
      expect(res.body.error).toEqual(expect.any(String));
    }
    const bad = await h.call(alice, 'POST', '/v1/notifications/ack', { until: 'yesterday' });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatch(/until/);
    expect((await h.call(undefined, 'GET', '/v1/notifications')).status).toBe(401);
    const marks = await h.runtime.pool.query('SELECT 1 FROM notification_reads WHERE user_id = $1', [alice.id]);
    expect(marks.rowCount).toBe(0);
  });
});
