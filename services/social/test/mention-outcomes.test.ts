import { READ_STATE_SUBJECTS, type ReadState } from '@chat/contracts';
import { channelMessageRecord } from '@chat/testkit';
import { v7 as uuidv7 } from 'uuid';
import { describe, expect, it } from 'vitest';
import { eventually } from './harness.ts';
import { readStatesHarness } from './read-state-fixtures.ts';

/**
 * What a channel mention leaves behind when it meets a block, an edit or an ack that came first
 * (guilds' events published on the real GUILDS stream, as guilds' relay would), and what an ack
 * or a channel level may name (guilds' channels as a stand-in answers rpc.guilds.channel.get).
 */
const { h, rs } = await readStatesHarness();

type User = Awaited<ReturnType<typeof h.addUser>>;
type Entry = { id: string; messageId: string | null; actorId: string | null; read: boolean; excerpt: string | null };
const serverId = uuidv7();

const applied = (event: { id: string }) =>
  eventually(async () => (await h.runtime.pool.query('SELECT 1 FROM processed_events WHERE event_id = $1', [event.id])).rowCount === 1);

async function feed(user: User): Promise<{ unreadCount: number; notifications: Entry[] }> {
  const res = await h.call(user, 'GET', '/v1/notifications');
  expect(res.status).toBe(200);
  return res.body;
}

async function readStateOf(user: User, id: string): Promise<ReadState | undefined> {
  const res = await h.call(user, 'GET', '/v1/users/@me/read-states');
  expect(res.status).toBe(200);
  return (res.body as ReadState[]).find((s) => s.id === id);
}

/** Guilds posts a message naming `mentioned` (resolved `via`), and its mention batch; answers the message once both applied. */
async function mentioning(channelId: string, author: User, mentioned: User[], via: 'user' | 'reply' = 'user', content = 'hey') {
  const message = {
    ...channelMessageRecord({ channelId, serverId, authorId: author.id, content }),
    id: uuidv7(),
    mentions: { users: via === 'user' ? mentioned.map((u) => u.id) : [], roles: [], everyone: false },
  };
  await applied(await rs.publish('guilds.message.created', message));
  const batch = { messageId: message.id, channelId, serverId, authorId: author.id, via, excerpt: content, createdAt: message.createdAt };
  await applied(await rs.publish(READ_STATE_SUBJECTS.messageMentioned, { ...batch, userIds: mentioned.map((u) => u.id) }));
  return message;
}

describe('blocks', () => {
  it('a mention or a reply by someone the user blocked neither counts nor enters the feed; others still do', async () => {
    const [bob, bully, carol] = [await h.addUser(), await h.addUser(), await h.addUser()];
    expect((await h.call(bob, 'POST', '/v1/friends/block', { userId: bully.id })).status).toBe(201);
    const channelId = uuidv7();
    const mention = await mentioning(channelId, bully, [bob]);
    const reply = await mentioning(channelId, bully, [bob], 'reply');
    const fromCarol = await mentioning(channelId, carol, [bob]);
    expect((await feed(bob)).notifications.map((n) => n.messageId)).toEqual([fromCarol.id]);
    expect((await readStateOf(bob, channelId))?.mentionCount).toBe(1);
    expect(
      (await h.events(READ_STATE_SUBJECTS.notificationCreated)).filter((e) =>
        [mention.id, reply.id].includes((e.data as { notification: Entry }).notification.messageId as string),
      ),
    ).toEqual([]);
  });
});

describe('edits', () => {
  it('an edit that takes the mention out takes back its count and its entry; one that keeps it keeps both', async () => {
    const [bob, carol, dan] = [await h.addUser(), await h.addUser(), await h.addUser()];
    const channelId = uuidv7();
    const message = await mentioning(channelId, dan, [bob, carol]);
    expect((await readStateOf(bob, channelId))?.mentionCount).toBe(1);
    const edited = { ...message, content: `<@${carol.id}> only you`, mentions: { users: [carol.id], roles: [], everyone: false } };
    await applied(await rs.publish('guilds.message.updated', edited));
    expect(await feed(bob)).toMatchObject({ unreadCount: 0, notifications: [] });
    expect((await readStateOf(bob, channelId))?.mentionCount).toBe(0);
    expect((await feed(carol)).notifications.map((n) => [n.messageId, n.excerpt])).toEqual([
      [message.id, `@${carol.displayName} only you`],
    ]);
    expect((await readStateOf(carol, channelId))?.mentionCount).toBe(1);
  });
});

describe('excerpts of edits', () => {
  it('an edited entry names a role by the name guilds last told (not a bare @role)', async () => {
    const [bob, dan] = [await h.addUser(), await h.addUser()];
    const channelId = uuidv7();
    const role = { id: uuidv7(), serverId, name: 'raid', color: 0, permissions: 0, position: 1, hoist: false, mentionable: true };
    await applied(await rs.publish('guilds.role.created', { ...role, createdAt: new Date().toISOString() }));
    await applied(await rs.publish('guilds.role.updated', { ...role, name: 'raiders', createdAt: new Date().toISOString() }));
    const message = await mentioning(channelId, dan, [bob], 'user', '@raid tonight');
    const edited = { ...message, content: `<@&${role.id}> tomorrow`, mentions: { users: [], roles: [role.id], everyone: false } };
    await applied(await rs.publish('guilds.message.updated', edited));
    expect((await feed(bob)).notifications.map((n) => n.excerpt)).toEqual(['@raiders tomorrow']);
  });
});

describe('acks that came first', () => {
  it('a mention of a message the user had already read past enters the feed read, and counts nowhere', async () => {
    const [bob, dan] = [await h.addUser(), await h.addUser()];
    const channelId = uuidv7();
    const message = { ...channelMessageRecord({ channelId, serverId, authorId: dan.id }), id: uuidv7() };
    await applied(await rs.publish('guilds.message.created', message));
    expect((await h.call(bob, 'PUT', `/v1/channels/${channelId}/ack`, { messageId: message.id })).status).toBe(200);
    const batch = {
      messageId: message.id,
      channelId,
      serverId,
      authorId: dan.id,
      via: 'user',
      excerpt: 'hello',
      createdAt: message.createdAt,
    };
    await applied(await rs.publish(READ_STATE_SUBJECTS.messageMentioned, { ...batch, userIds: [bob.id] }));
    const { unreadCount, notifications } = await feed(bob);
    expect(notifications.map((n) => [n.messageId, n.read])).toEqual([[message.id, true]]);
    expect(unreadCount).toBe(0);
    expect((await readStateOf(bob, channelId))?.mentionCount).toBe(0);
    const announced = (await h.events(READ_STATE_SUBJECTS.notificationCreated)).map(
      (e) => e.data as { notification: Entry; userIds: string[] },
    );
    expect(announced.filter((e) => e.notification.messageId === message.id)).toEqual([
      { notification: notifications[0], userIds: [bob.id] },
    ]);
  });
});

describe('what may be acked and given a level', () => {
  it('a voice channel has no messages to read: its ack is 404 and leaves no read state', async () => {
    const bob = await h.addUser();
    const [textId, voiceId] = [rs.channel(uuidv7(), serverId), rs.channel(uuidv7(), serverId, 'voice')];
    const message = { ...channelMessageRecord({ channelId: textId, serverId, authorId: bob.id }), id: uuidv7() };
    await applied(await rs.publish('guilds.message.created', message));
    const res = await h.call(bob, 'PUT', `/v1/channels/${voiceId}/ack`, { messageId: message.id });
    expect(res).toEqual({ status: 404, body: { error: expect.any(String) } });
    expect(await readStateOf(bob, voiceId)).toBeUndefined();
    expect((await h.call(bob, 'PUT', `/v1/channels/${textId}/ack`, { messageId: message.id })).status).toBe(200);
  });

  it('refuses with 400 naming them levels for channels of another server or unknown ones, and keeps the settings', async () => {
    const [home, other] = [uuidv7(), uuidv7()];
    const bob = rs.joined(await h.addUser(), home);
    const [mine, foreign] = [rs.channel(uuidv7(), home), rs.channel(uuidv7(), other)];
    const path = `/v1/users/@me/notification-settings/${home}`;
    expect((await h.call(bob, 'PUT', path, { level: 'mentions', channels: { [mine]: 'none' } })).status).toBe(200);
    const refused = await h.call(bob, 'PUT', path, { level: 'all', channels: { [mine]: 'all', [foreign]: 'none' } });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toContain(foreign);
    expect(refused.body.error).not.toContain(mine);
    expect((await h.call(bob, 'GET', path)).body).toEqual({
      serverId: home,
      level: 'mentions',
      muteUntil: null,
      channels: { [mine]: 'none' },
    });
  });
});
