import { READ_STATE_SUBJECTS } from '@chat/contracts';
import { channelMessageRecord, lastAttempt } from '@chat/testkit';
import { v7 as uuidv7 } from 'uuid';
import { describe, expect, it } from 'vitest';
import { insertNotification } from '../src/db/notifications.ts';
import { eventually } from './harness.ts';
import { readStatesHarness } from './read-state-fixtures.ts';

/**
 * The feed shows only what its user may still see (Discord's inbox): nothing of a channel they can
 * no longer view (guilds answers rpc.guilds.channels.visible; a stand-in here) or of a server or
 * group they left, and no text an author edited out or deleted.
 */
const { h, rs } = await readStatesHarness();

type User = Awaited<ReturnType<typeof h.addUser>>;
type Entry = { id: string; kind: string; messageId: string | null; excerpt: string | null } & Record<string, unknown>;

const feed = async (user: User, query = '') => {
  const res = await h.call(user, 'GET', `/v1/notifications${query}`);
  expect(res.status).toBe(200);
  return res.body as { unreadCount: number; lastReadId: string | null; notifications: Entry[] };
};
const applied = (event: { id: string }) =>
  eventually(async () => (await h.runtime.pool.query('SELECT 1 FROM processed_events WHERE event_id = $1', [event.id])).rowCount === 1);
const storedMentions = async (user: User) =>
  (await h.runtime.pool.query('SELECT message_id FROM channel_mentions WHERE user_id = $1 ORDER BY message_id', [user.id])).rows.map(
    (r) => r.message_id,
  );
const storedExcerpts = async (user: User, messageId: string) =>
  (await h.runtime.pool.query('SELECT excerpt FROM notifications WHERE user_id = $1 AND message_id = $2', [user.id, messageId])).rows.map(
    (r) => r.excerpt,
  );

/** Guilds' resolved mention of `user` in a channel; answers the message id once applied. */
async function mentioned(user: User, at: { serverId: string; channelId: string }, excerpt = 'hello', createdAt = new Date()) {
  const messageId = uuidv7({ msecs: createdAt.getTime() });
  const batch = { messageId, ...at, authorId: uuidv7(), via: 'user', excerpt, createdAt: createdAt.toISOString(), userIds: [user.id] };
  await applied(await rs.publish(READ_STATE_SUBJECTS.messageMentioned, batch));
  return messageId;
}

async function joinRequestApproved(user: User, serverId: string) {
  const at = new Date().toISOString();
  const request = {
    id: uuidv7(),
    serverId,
    userId: user.id,
    message: null,
    status: 'approved',
    reviewedBy: uuidv7(),
    reviewedAt: at,
    createdAt: at,
  };
  await applied(await rs.publish('guilds.joinrequest.reviewed', request));
}

describe('entries of a channel the user may no longer view', () => {
  it('are neither shown nor counted, pages stay full, guilds is asked once per request, and they come back with access', async () => {
    const ann = await h.addUser();
    const serverId = uuidv7();
    const [seen, gone] = [
      { serverId, channelId: uuidv7() },
      { serverId, channelId: uuidv7() },
    ];
    const seenIds = [await mentioned(ann, seen), await mentioned(ann, seen), await mentioned(ann, seen)];
    for (let i = 0; i < 3; i++) await mentioned(ann, gone, 'secret plans');
    await joinRequestApproved(ann, serverId);
    expect((await feed(ann)).unreadCount).toBe(7);

    // An override denies VIEW_CHANNEL: guilds answers the channel as hidden; no event tells social.
    rs.hidden.add(`${ann.id}:${gone.channelId}`);
    const asked = rs.questions.length;
    const first = await feed(ann, '?limit=3');
    expect(rs.questions.length - asked).toBe(1);
    expect(first.unreadCount).toBe(4);
    // The three newest entries of the hidden channel are read past: the page is still full.
    expect(first.notifications.map((n) => n.kind)).toEqual(['join_request_approved', 'mention', 'mention']);
    expect(first.notifications.slice(1).map((n) => n.messageId)).toEqual([seenIds[2], seenIds[1]]);
    expect(first.notifications.some((n) => n.channelId === gone.channelId || n.excerpt === 'secret plans')).toBe(false);
    const rest = await feed(ann, `?limit=3&before=${first.notifications[2]?.id}`);
    expect(rest.notifications.map((n) => n.messageId)).toEqual([seenIds[0]]);

    // Acking counts what is left past the mark, the hidden channel's entries aside.
    const acked = await h.call(ann, 'POST', '/v1/notifications/ack', { until: first.notifications[1]?.id });
    expect(acked.status).toBe(200);
    expect(acked.body).toEqual({ unreadCount: 1, lastReadId: first.notifications[1]?.id });

    // Access back (the override removed): the entries were hidden when read, not deleted.
    rs.hidden.delete(`${ann.id}:${gone.channelId}`);
    const back = await feed(ann);
    expect(back.notifications.filter((n) => n.channelId === gone.channelId).map((n) => n.excerpt)).toEqual(Array(3).fill('secret plans'));
    expect(back.unreadCount).toBe(4);
  });

  it('never cut a page short while older entries the user sees remain, however many hidden or deleted channels hold newer ones', async () => {
    const ann = await h.addUser();
    const serverId = uuidv7();
    const kept = { serverId, channelId: uuidv7() };
    const keptIds = [await mentioned(ann, kept, 'older'), await mentioned(ann, kept, 'old')];
    const lost = Array.from({ length: 6 }, () => ({ serverId, channelId: uuidv7() }));
    for (const at of lost) for (const excerpt of ['gone', 'gone too']) await mentioned(ann, at, excerpt);
    // All read: no unread entry names the lost channels, so only reading on meets them.
    const newest = (await feed(ann, '?limit=1')).notifications[0]?.id;
    expect((await h.call(ann, 'POST', '/v1/notifications/ack', { until: newest })).status).toBe(200);
    for (const at of lost.slice(0, 3)) rs.hidden.add(`${ann.id}:${at.channelId}`);
    for (const at of lost.slice(3)) rs.deletedChannels.add(at.channelId);

    const asked = rs.questions.length;
    const first = await feed(ann, '?limit=1');
    expect(first).toEqual({ unreadCount: 0, lastReadId: newest, notifications: [expect.objectContaining({ messageId: keptIds[1] })] });
    // Reads grow: fewer questions to guilds than channels passed.
    expect(rs.questions.length - asked).toBeLessThanOrEqual(4);
    const second = await feed(ann, `?limit=1&before=${first.notifications[0]?.id}`);
    expect(second.notifications.map((n) => n.messageId)).toEqual([keptIds[0]]);
    expect((await feed(ann, `?limit=1&before=${second.notifications[0]?.id}`)).notifications).toEqual([]);
    expect((await feed(ann, '?limit=2')).notifications.map((n) => n.messageId)).toEqual([keptIds[1], keptIds[0]]);
    // Hidden when read, not deleted: all 14 entries are still stored.
    const { rows } = await h.runtime.pool.query('SELECT count(*)::int AS n FROM notifications WHERE user_id = $1', [ann.id]);
    expect(rows).toEqual([{ n: 14 }]);
  });

  it('are deleted with their mention counts when the user leaves or is kicked (guilds.member.left), not those of a later rejoin', async () => {
    const ann = await h.addUser();
    const [serverId, otherServer] = [uuidv7(), uuidv7()];
    const channel = { serverId, channelId: uuidv7() };
    const before = await mentioned(ann, channel, 'before the kick', new Date(Date.now() - 60_000));
    // The channel's head is what ties its mentions to the server.
    await applied(await rs.publish('guilds.message.created', { ...channelMessageRecord(channel), id: before }));
    const elsewhere = await mentioned(ann, { serverId: otherServer, channelId: uuidv7() }, 'other server', new Date(Date.now() - 60_000));
    await joinRequestApproved(ann, serverId);
    // Rejoined and mentioned again: its event may be applied before the kick's (another consumer).
    const kickedAt = new Date(Date.now() - 30_000).toISOString();
    const later = await mentioned(ann, channel, 'after rejoining');
    await rs.publish('guilds.member.left', { serverId, userId: ann.id, reason: 'kicked', by: uuidv7() }, kickedAt);

    expect(
      await lastAttempt(
        () => storedExcerpts(ann, before),
        (left) => left.length === 0,
      ),
    ).toEqual([]);
    expect(await storedExcerpts(ann, later)).toEqual(['after rejoining']);
    expect(await storedExcerpts(ann, elsewhere)).toEqual(['other server']);
    expect(await storedMentions(ann)).toEqual([elsewhere, later].sort());
    const { notifications, unreadCount } = await feed(ann);
    expect(notifications.map((n) => n.kind).sort()).toEqual(['join_request_approved', 'mention', 'mention']);
    expect(unreadCount).toBe(3);
  });
});

describe('entries of a group the user left', () => {
  it('leave the feed and its count with the leave, and an entry applied after the leave does not show', async () => {
    const [ann, ben, cat] = [await h.addUser(), await h.addUser(), await h.addUser()];
    const group = await h.call(ann, 'POST', '/v1/dm/conversations', { userIds: [ben.id, cat.id] });
    expect(group.status).toBe(201);
    const conversationId = group.body.id as string;
    const mine = await h.call(ann, 'POST', '/v1/dm/messages', { conversationId, content: 'hello' });
    const reply = await h.call(ben, 'POST', '/v1/dm/messages', { conversationId, content: 'group secret', replyToId: mine.body.id });
    expect(reply.status).toBe(201);
    await eventually(async () => (await feed(ann)).notifications.some((n) => n.messageId === reply.body.id));

    expect((await h.call(ann, 'DELETE', `/v1/dm/conversations/${conversationId}/members/@me`)).status).toBe(204);
    expect(await feed(ann)).toMatchObject({ unreadCount: 0, notifications: [] });
    expect(await storedExcerpts(ann, reply.body.id)).toEqual([]);

    // A reply sent before the leave whose event is applied after it: stored, never shown nor counted.
    const late = uuidv7();
    const entry = { id: uuidv7(), kind: 'dm_reply', actorId: ben.id, conversationId, messageId: late, excerpt: 'late secret' } as const;
    const empty = { via: null, serverId: null, channelId: null, callId: null, createdAt: new Date().toISOString() };
    await insertNotification(h.runtime.pool, [ann.id], { ...empty, ...entry });
    expect(await feed(ann)).toMatchObject({ unreadCount: 0, notifications: [] });
  });
});

describe('the excerpt of an edited or deleted message', () => {
  it('follows an edit of a channel message (the removed text is gone), and a delete removes the entries', async () => {
    const [ann, ben] = [await h.addUser(), await h.addUser()];
    const channel = { serverId: uuidv7(), channelId: uuidv7() };
    const messageId = await mentioned(ann, channel, `@${ann.displayName} my password is hunter2`);
    const edited = {
      ...channelMessageRecord({ ...channel, content: `<@${ann.id}> (removed)` }),
      id: messageId,
      mentions: { users: [ann.id], roles: [], everyone: false },
      editedAt: new Date().toISOString(),
    };
    await rs.publish('guilds.message.updated', edited);
    // Another message's mention, on the same consumer after the edit: once it is applied, so is the edit.
    await mentioned(ben, channel);
    expect(await storedExcerpts(ann, messageId)).toEqual([`@${ann.displayName} (removed)`]);
    expect((await feed(ann)).notifications[0]).toMatchObject({ messageId, excerpt: `@${ann.displayName} (removed)` });
    expect((await feed(ben)).notifications.map((n) => n.excerpt)).toEqual(['hello']);

    await applied(await rs.publish('guilds.message.deleted', { id: messageId, ...channel }));
    expect(await storedExcerpts(ann, messageId)).toEqual([]);
    expect(await feed(ann)).toMatchObject({ unreadCount: 0, notifications: [] });
  });

  it('follows an edit of a direct message reply (social.dm.updated)', async () => {
    const [ann, ben] = [await h.addUser(), await h.addUser()];
    const conversationId = (await h.call(ann, 'POST', '/v1/dm/conversations', { userIds: [ben.id] })).body.id;
    const mine = await h.call(ann, 'POST', '/v1/dm/messages', { conversationId, content: 'what is it?' });
    const reply = await h.call(ben, 'POST', '/v1/dm/messages', { conversationId, content: 'it is hunter2', replyToId: mine.body.id });
    await eventually(async () => (await storedExcerpts(ann, reply.body.id)).length === 1);
    const patched = await h.call(ben, 'PATCH', `/v1/dm/messages/${reply.body.id}`, { content: 'never mind' });
    expect(patched.status).toBe(200);
    const stored = await lastAttempt(
      () => storedExcerpts(ann, reply.body.id),
      (excerpts) => excerpts[0] === 'never mind',
    );
    expect(stored).toEqual(['never mind']);
    expect((await feed(ann)).notifications[0]).toMatchObject({ kind: 'dm_reply', messageId: reply.body.id, excerpt: 'never mind' });
  });
});
