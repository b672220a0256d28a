import { until } from '@chat/testkit';
import { beforeAll, describe, expect, it } from 'vitest';
import { api, conversationOnceKnown, fileSockets, newUser, type TestUser } from './helpers.ts';

/**
 * Issue 19 through the gateway and every real process: guilds resolves a message's mentions after
 * commit and publishes them; social counts them, fills the feed and serves read states under guilds'
 * and auth's prefixes (the gateway proxies by the contract's service); an ack reaches the user's
 * other sessions as READ_STATE_UPDATE on a real WebSocket.
 */
const VIEW_CHANNEL = 1 << 10;

let owner: TestUser;
let alice: TestUser;
let hidden: TestUser;
let serverId: string;
let channelId: string;
const { identified: socketOf } = fileSockets();

const readStates = async (user: TestUser) => {
  const res = await api('GET', '/v1/users/@me/read-states', { user });
  expect(res.status).toBe(200);
  return res.body as {
    id: string;
    kind: string;
    mentionCount: number;
    unread: boolean;
    lastReadMessageId: string | null;
    lastMessageId: string | null;
  }[];
};

beforeAll(async () => {
  [owner, alice, hidden] = await Promise.all([newUser('rsowner'), newUser('rsalice'), newUser('rshidden')]);
  const server = await api('POST', '/v1/servers', { user: owner, body: { name: 'Read states', isPublic: true } });
  expect(server.status).toBe(201);
  serverId = server.body.id;
  for (const user of [alice, hidden]) expect((await api('POST', `/v1/servers/${serverId}/join`, { user })).status).toBe(200);
  const channel = await api('POST', `/v1/servers/${serverId}/channels`, { user: owner, body: { name: 'news', channelType: 'text' } });
  channelId = channel.body.id;
  const denied = await api('PUT', `/v1/channels/${channelId}/permissions`, {
    user: owner,
    body: { userId: hidden.id, allowBits: 0, denyBits: VIEW_CHANNEL },
  });
  expect(denied.status).toBe(200);
});

describe('read states and notifications through the gateway', () => {
  it('counts a mention for who may view the channel, feeds it, and an ack clears it and reaches the other session', async () => {
    const [phone, desktop] = [await socketOf(alice), await socketOf(alice)];
    const posted = await api('POST', `/v1/channels/${channelId}/messages`, {
      user: owner,
      body: { content: `<@${alice.id}> <@${hidden.id}> @everyone the release is out` },
    });
    expect(posted.status).toBe(201);
    const messageId = posted.body.id as string;

    await until(async () => (await readStates(alice)).some((s) => s.id === channelId && s.mentionCount === 1));
    expect((await readStates(alice)).find((s) => s.id === channelId)).toEqual({
      id: channelId,
      kind: 'channel',
      lastReadMessageId: null,
      lastMessageId: messageId,
      unread: true,
      mentionCount: 1,
    });
    const created = await phone.dispatch('NOTIFICATION_CREATE', (d) => d.messageId === messageId);
    expect(created.d).toMatchObject({ kind: 'mention', via: 'user', serverId, channelId, actorId: owner.id, read: false });
    const feed = await api('GET', '/v1/notifications', { user: alice });
    expect(feed.status).toBe(200);
    expect(feed.body.unreadCount).toBeGreaterThanOrEqual(1);
    expect(feed.body.notifications[0]).toEqual(created.d);
    expect(feed.body.notifications[0].excerpt).toContain('the release is out');

    // The member denied VIEW_CHANNEL is named, yet counts nothing, sees no such channel and cannot ack it.
    expect((await readStates(hidden)).map((s) => s.id)).not.toContain(channelId);
    const refused = await api('PUT', `/v1/channels/${channelId}/ack`, { user: hidden, body: { messageId } });
    expect(refused.status).toBe(404);
    expect((await api('GET', '/v1/notifications', { user: hidden })).body.notifications).toEqual([]);

    const acked = await api('PUT', `/v1/channels/${channelId}/ack`, { user: alice, body: { messageId } });
    expect(acked.status).toBe(200);
    expect(acked.body).toMatchObject({ id: channelId, lastReadMessageId: messageId, unread: false, mentionCount: 0 });
    const update = await desktop.dispatch('READ_STATE_UPDATE', (d) => d.id === channelId);
    expect(update.d).toEqual(acked.body);
    expect((await readStates(alice)).find((s) => s.id === channelId)).toEqual(acked.body);
  });

  it('gives the author no reply entry and no mention for a reply in a group by someone they blocked', async () => {
    const [author, blocked, other] = await Promise.all([newUser('rsauthor'), newUser('rsblocked'), newUser('rsother')]);
    await conversationOnceKnown(author, blocked);
    await conversationOnceKnown(author, other);
    const group = await api('POST', '/v1/dm/conversations', { user: author, body: { userIds: [blocked.id, other.id] } });
    expect(group.status).toBe(201);
    const dm = async (user: TestUser, content: string, replyToId?: string) => {
      const res = await api('POST', '/v1/dm/messages', { user, body: { conversationId: group.body.id, content, replyToId } });
      expect(res.status).toBe(201);
      return res.body.id as string;
    };
    const mine = await dm(author, 'from the author');
    expect((await api('POST', '/v1/friends/block', { user: author, body: { userId: blocked.id } })).status).toBe(201);
    const socket = await socketOf(author);
    await dm(blocked, 'a reply from the blocked one', mine);
    const fromOther = await dm(other, 'a reply from the other one', mine);

    // Social turns the group's messages into entries in order: the later reply's entry closes the window.
    const entry = await socket.dispatch('NOTIFICATION_CREATE', (d) => d.messageId === fromOther);
    expect(entry.d).toMatchObject({ actorId: other.id, read: false });
    expect(socket.dispatches('NOTIFICATION_CREATE').map((f) => f.d.actorId)).toEqual([other.id]);
    expect((await api('GET', '/v1/notifications', { user: author })).body.notifications.map((n: { id: string }) => n.id)).toEqual([
      entry.d.id,
    ]);
    // Read states follow the same messages in order too: once the later one is the last, both were applied.
    await until(async () => (await readStates(author)).some((s) => s.id === group.body.id && s.lastMessageId === fromOther));
    expect((await readStates(author)).find((s) => s.id === group.body.id)).toMatchObject({ mentionCount: 1, unread: true });
  });

  it('serves notification settings and conversation acks, social routes under auth’s and social’s prefixes', async () => {
    const put = await api('PUT', `/v1/users/@me/notification-settings/${serverId}`, { user: alice, body: { level: 'mentions' } });
    expect(put.status).toBe(200);
    expect(put.body).toEqual({ serverId, level: 'mentions', muteUntil: null, channels: {} });
    expect((await api('GET', `/v1/users/@me/notification-settings/${serverId}`, { user: alice })).body).toEqual(put.body);

    const conversationId = await conversationOnceKnown(alice, owner);
    const sent = await api('POST', '/v1/dm/messages', { user: owner, body: { conversationId, content: 'psst' } });
    expect(sent.status).toBe(201);
    const before = (await readStates(alice)).find((s) => s.id === conversationId);
    expect(before).toMatchObject({ kind: 'conversation', unread: true, mentionCount: 1 });
    const acked = await api('PUT', `/v1/dm/conversations/${conversationId}/ack`, { user: alice, body: { messageId: sent.body.id } });
    expect(acked.status).toBe(200);
    expect(acked.body).toMatchObject({ id: conversationId, unread: false, mentionCount: 0 });
    const newest = (await api('GET', '/v1/notifications?limit=1', { user: alice })).body.notifications[0].id;
    const ackedFeed = await api('POST', '/v1/notifications/ack', { user: alice, body: { until: newest } });
    expect(ackedFeed.status).toBe(200);
    expect(ackedFeed.body).toEqual({ unreadCount: 0, lastReadId: newest });
  });
});
