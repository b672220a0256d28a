import { ChannelGetRpc, READ_STATE_SUBJECTS, ServerChannelsAmongRpc } from '@chat/contracts';
import { channelMessageRecord } from '@chat/testkit';
import { v7 as uuidv7 } from 'uuid';
import { describe, expect, it } from 'vitest';
import { eventually } from './harness.ts';
import { readStatesHarness } from './read-state-fixtures.ts';

/**
 * What the user's other sessions are told of their feed and their acks (events written with the
 * change, in its transaction): a feed ack (social.notifications.acked), entries that left the feed
 * (social.notifications.deleted), and what a channel ack may name (guilds answers, through a
 * stand-in, which channel each published message is in).
 */
const { h, rs } = await readStatesHarness();

type User = Awaited<ReturnType<typeof h.addUser>>;
type Entry = { id: string; messageId: string | null };
const serverId = uuidv7();

const applied = (event: { id: string }) =>
  eventually(async () => (await h.runtime.pool.query('SELECT 1 FROM processed_events WHERE event_id = $1', [event.id])).rowCount === 1);

async function feed(user: User): Promise<{ unreadCount: number; lastReadId: string | null; notifications: Entry[] }> {
  const res = await h.call(user, 'GET', '/v1/notifications');
  expect(res.status).toBe(200);
  return res.body;
}

/** Guilds posts a message in the channel naming `mentioned`, and its mention batch; answers the message once both applied. */
async function mentioning(channelId: string, author: User, mentioned: User[], content = 'hey') {
  const message = {
    ...channelMessageRecord({ channelId, serverId, authorId: author.id, content }),
    id: uuidv7(),
    mentions: { users: mentioned.map((u) => u.id), roles: [], everyone: false },
  };
  await applied(await rs.publish('guilds.message.created', message));
  const batch = {
    messageId: message.id,
    channelId,
    serverId,
    authorId: author.id,
    via: 'user',
    excerpt: content,
    createdAt: message.createdAt,
  };
  await applied(await rs.publish(READ_STATE_SUBJECTS.messageMentioned, { ...batch, userIds: mentioned.map((u) => u.id) }));
  return message;
}

const told = async (subject: string, userId: string) =>
  (await h.events(subject)).map((e) => e.data).filter((d) => d.userId === userId || (d.userIds as string[] | undefined)?.includes(userId));

describe('feed acks', () => {
  it('tells the user’s other sessions the REST answer of a move, and nothing of an ack that moves nothing', async () => {
    const [ann, dan] = [await h.addUser(), await h.addUser()];
    const channelId = uuidv7();
    await mentioning(channelId, dan, [ann]);
    await mentioning(channelId, dan, [ann]);
    const [newest, older] = (await feed(ann)).notifications;
    const acked = await h.call(ann, 'POST', '/v1/notifications/ack', { until: older?.id });
    expect(acked).toEqual({ status: 200, body: { unreadCount: 1, lastReadId: older?.id } });
    expect((await h.call(ann, 'POST', '/v1/notifications/ack', { until: older?.id })).body).toEqual(acked.body);
    expect(await told(READ_STATE_SUBJECTS.notificationsAcked, ann.id)).toEqual([{ userId: ann.id, ...acked.body }]);
    const all = await h.call(ann, 'POST', '/v1/notifications/ack', { until: newest?.id });
    expect(await told(READ_STATE_SUBJECTS.notificationsAcked, ann.id)).toEqual([
      { userId: ann.id, ...acked.body },
      { userId: ann.id, unreadCount: 0, lastReadId: newest?.id },
    ]);
    expect(all.body).toEqual({ unreadCount: 0, lastReadId: newest?.id });
  });
});

describe('entries that leave the feed', () => {
  it('a deleted message: one event naming its entries and whose they were', async () => {
    const [ann, bob, dan] = [await h.addUser(), await h.addUser(), await h.addUser()];
    const channelId = uuidv7();
    const message = await mentioning(channelId, dan, [ann, bob]);
    const [entry] = (await feed(ann)).notifications;
    expect(entry?.messageId).toBe(message.id);
    await applied(await rs.publish('guilds.message.deleted', { id: message.id, channelId, serverId }));
    expect((await feed(ann)).notifications).toEqual([]);
    const deleted = await told(READ_STATE_SUBJECTS.notificationsDeleted, ann.id);
    expect(deleted).toEqual([{ ids: [entry?.id], userIds: expect.arrayContaining([ann.id, bob.id]) }]);
    expect(deleted[0]?.userIds).toHaveLength(2);
  });

  it('a mention edited out: only the user who lost the entry is told', async () => {
    const [ann, bob, dan] = [await h.addUser(), await h.addUser(), await h.addUser()];
    const channelId = uuidv7();
    const message = await mentioning(channelId, dan, [ann, bob]);
    const [entry] = (await feed(bob)).notifications;
    const edited = { ...message, content: 'only ann', mentions: { users: [ann.id], roles: [], everyone: false } };
    await applied(await rs.publish('guilds.message.updated', edited));
    expect((await feed(bob)).notifications).toEqual([]);
    expect(await told(READ_STATE_SUBJECTS.notificationsDeleted, bob.id)).toEqual([{ ids: [entry?.id], userIds: [bob.id] }]);
    expect(await told(READ_STATE_SUBJECTS.notificationsDeleted, ann.id)).toEqual([]);
  });

  it('a friend request cancelled: the recipient is told its entry left', async () => {
    const [ann, bob] = [await h.addUser(), await h.addUser()];
    expect((await h.call(ann, 'POST', '/v1/friends/requests', { userId: bob.id })).status).toBeLessThan(300);
    await eventually(async () => (await feed(bob)).notifications.length === 1);
    const [entry] = (await feed(bob)).notifications;
    expect((await h.call(ann, 'POST', '/v1/friends/cancel', { userId: bob.id })).status).toBeLessThan(300);
    expect((await feed(bob)).notifications).toEqual([]);
    expect(await told(READ_STATE_SUBJECTS.notificationsDeleted, bob.id)).toEqual([{ ids: [entry?.id], userIds: [bob.id] }]);
  });
});

describe('channel acks', () => {
  it('refuses with 404 an id of another channel’s message, and leaves the mark where it was', async () => {
    const [ann, dan] = [await h.addUser(), await h.addUser()];
    const [here, other] = [uuidv7(), uuidv7()];
    const seen = await mentioning(here, dan, [ann]);
    expect((await h.call(ann, 'PUT', `/v1/channels/${here}/ack`, { messageId: seen.id })).status).toBe(200);
    const unseen = await mentioning(here, dan, [ann]);
    const elsewhere = { ...channelMessageRecord({ channelId: other, serverId, authorId: dan.id }), id: uuidv7() };
    await applied(await rs.publish('guilds.message.created', elsewhere));
    const refused = await h.call(ann, 'PUT', `/v1/channels/${here}/ack`, { messageId: elsewhere.id });
    expect(refused).toEqual({ status: 404, body: { error: 'Message not found' } });
    const state = (await h.call(ann, 'GET', '/v1/users/@me/read-states')).body.find((s: { id: string }) => s.id === here);
    expect(state).toMatchObject({ lastReadMessageId: seen.id, lastMessageId: unseen.id, unread: true, mentionCount: 1 });
  });

  it('refuses with 404 a deleted message’s id', async () => {
    const [ann, dan] = [await h.addUser(), await h.addUser()];
    const channelId = uuidv7();
    const message = await mentioning(channelId, dan, [ann]);
    await applied(await rs.publish('guilds.message.deleted', { id: message.id, channelId, serverId }));
    const refused = await h.call(ann, 'PUT', `/v1/channels/${channelId}/ack`, { messageId: message.id });
    expect(refused).toEqual({ status: 404, body: { error: 'Message not found' } });
  });
});

describe('notification settings', () => {
  it('asks guilds once which of the channels given levels are the server’s, however many there are', async () => {
    const home = uuidv7();
    const bob = rs.joined(await h.addUser(), home);
    const channels = Array.from({ length: 50 }, () => rs.channel(uuidv7(), home));
    const asked = { among: 0, get: 0 };
    const subs = [
      h.runtime.bus.nc.subscribe(h.runtime.bus.subject(ServerChannelsAmongRpc.subject), { callback: () => void asked.among++ }),
      h.runtime.bus.nc.subscribe(h.runtime.bus.subject(ChannelGetRpc.subject), { callback: () => void asked.get++ }),
    ];
    await h.runtime.bus.nc.flush();
    try {
      const levels = Object.fromEntries(channels.map((id) => [id, 'none']));
      const res = await h.call(bob, 'PUT', `/v1/users/@me/notification-settings/${home}`, { level: 'all', channels: levels });
      expect(res).toEqual({ status: 200, body: { serverId: home, level: 'all', muteUntil: null, channels: levels } });
      await h.runtime.bus.nc.flush();
      expect(asked).toEqual({ among: 1, get: 0 });
    } finally {
      for (const sub of subs) sub.unsubscribe();
    }
  });
});
