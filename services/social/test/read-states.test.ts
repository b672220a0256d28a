import { copyFile, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { READ_STATE_SUBJECTS, type ReadState, STREAMS } from '@chat/contracts';
import { applyOnce, createPool, type EventEnvelope, migrate } from '@chat/kit';
import { channelMessageRecord, createTestDatabase, lastAttempt } from '@chat/testkit';
import { v7 as uuidv7 } from 'uuid';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { type ApplyEvent, applierOf, READ_STATE_CONSUMERS } from '../src/bus/read-states.ts';
import { eventually } from './harness.ts';
import { readStatesHarness } from './read-state-fixtures.ts';

/**
 * Issue 19: read states from events. Channel facts come from guilds' events (published here on the
 * real GUILDS stream, as guilds' relay would), mentions arrive already resolved by guilds, and
 * whether a channel is still viewable is asked of guilds once per request (a stand-in answers).
 */
const { h, rs } = await readStatesHarness();

type User = Awaited<ReturnType<typeof h.addUser>>;
let alice: User;
let bob: User;
const serverId = uuidv7();

function channelMessage(channelId: string, author: User, content = 'hello') {
  // Ids in time order: the read marks compare them.
  return { ...channelMessageRecord({ channelId, serverId, authorId: author.id, content }), id: uuidv7() };
}

const applied = (event: { id: string }) =>
  eventually(async () => (await h.runtime.pool.query('SELECT 1 FROM processed_events WHERE event_id = $1', [event.id])).rowCount === 1);

/** Guilds posts a message in the channel, then its resolved mentions (`via` -> users); answers the message once applied. */
async function posted(channelId: string, author: User, mentions: Partial<Record<'user' | 'role' | 'everyone' | 'reply', User[]>> = {}) {
  const message = channelMessage(channelId, author);
  await applied(await rs.publish('guilds.message.created', message));
  for (const [via, users] of Object.entries(mentions)) {
    const batch = { messageId: message.id, channelId, serverId, authorId: author.id, via, excerpt: 'hello', createdAt: message.createdAt };
    await applied(await rs.publish(READ_STATE_SUBJECTS.messageMentioned, { ...batch, userIds: users.map((u) => u.id) }));
  }
  return message;
}

async function readStateOf(user: User, id: string) {
  const res = await h.call(user, 'GET', '/v1/users/@me/read-states');
  expect(res.status).toBe(200);
  return (res.body as ReadState[]).find((s) => s.id === id);
}

const storedChannelLevels = async (user: User) =>
  (await h.runtime.pool.query('SELECT channels FROM notification_settings WHERE user_id = $1', [user.id])).rows.map((r) => r.channels);

const ackChannel = (user: User, channelId: string, messageId: string) =>
  h.call(user, 'PUT', `/v1/channels/${channelId}/ack`, { messageId });
const updates = async (user: User) =>
  (await h.events(READ_STATE_SUBJECTS.readStateUpdated)).filter((e) => e.data.userId === user.id).map((e) => e.data.readState);

beforeAll(async () => {
  [alice, bob] = [await h.addUser(), await h.addUser()];
});

describe('channel read states', () => {
  it('counts user, role and @everyone mentions and marks the channel unread; the author has read their own message', async () => {
    const channelId = uuidv7();
    await posted(channelId, bob, { user: [alice] });
    await posted(channelId, bob, { role: [alice] });
    const last = await posted(channelId, bob, { everyone: [alice] });
    expect(await readStateOf(alice, channelId)).toEqual({
      id: channelId,
      kind: 'channel',
      lastReadMessageId: null,
      lastMessageId: last.id,
      unread: true,
      mentionCount: 3,
    });
    expect(await readStateOf(bob, channelId)).toEqual({
      id: channelId,
      kind: 'channel',
      lastReadMessageId: last.id,
      lastMessageId: last.id,
      unread: false,
      mentionCount: 0,
    });
  });

  it('acks only forwards: acking past a mention clears it, an older id changes nothing and tells nobody', async () => {
    const channelId = uuidv7();
    const first = await posted(channelId, bob, { user: [alice] });
    const second = await posted(channelId, bob, { user: [alice] });

    const acked = await ackChannel(alice, channelId, first.id);
    expect(acked.status).toBe(200);
    expect(acked.body).toEqual({
      id: channelId,
      kind: 'channel',
      lastReadMessageId: first.id,
      lastMessageId: second.id,
      unread: true,
      mentionCount: 1,
    });
    const all = await ackChannel(alice, channelId, second.id);
    expect(all.body).toMatchObject({ lastReadMessageId: second.id, unread: false, mentionCount: 0 });
    const back = await ackChannel(alice, channelId, first.id);
    expect(back.status).toBe(200);
    expect(back.body).toMatchObject({ lastReadMessageId: second.id, unread: false, mentionCount: 0 });
    expect(await readStateOf(alice, channelId)).toEqual(all.body);
    // Two moves, two READ_STATE_UPDATEs for alice's other sessions; the step back announced nothing.
    expect((await updates(alice)).filter((s) => (s as { id: string }).id === channelId)).toEqual([acked.body, all.body]);
  });

  it('does not count a mention of a message the user had already read past', async () => {
    const channelId = uuidv7();
    const early = channelMessage(channelId, bob);
    const later = await posted(channelId, bob);
    expect((await ackChannel(alice, channelId, later.id)).status).toBe(200);
    const batch = { messageId: early.id, channelId, serverId, authorId: bob.id, via: 'user', excerpt: 'x', createdAt: early.createdAt };
    await applied(await rs.publish(READ_STATE_SUBJECTS.messageMentioned, { ...batch, userIds: [alice.id] }));
    expect(await readStateOf(alice, channelId)).toMatchObject({ unread: false, mentionCount: 0 });
  });

  it('forgets the mention of a deleted message', async () => {
    const channelId = uuidv7();
    const message = await posted(channelId, bob, { user: [alice] });
    expect((await readStateOf(alice, channelId))?.mentionCount).toBe(1);
    await applied(await rs.publish('guilds.message.deleted', { id: message.id, channelId, serverId }));
    expect((await readStateOf(alice, channelId))?.mentionCount).toBe(0);
  });

  it('drops a channel the user can no longer view from the list, asking guilds once for all channels, and refuses its ack with 404', async () => {
    const [seen, gone] = [uuidv7(), uuidv7()];
    await posted(seen, bob, { user: [alice] });
    const message = await posted(gone, bob, { user: [alice] });
    rs.hidden.add(`${alice.id}:${gone}`);
    try {
      const asked = rs.questions.length;
      const list = await h.call(alice, 'GET', '/v1/users/@me/read-states');
      expect(list.status).toBe(200);
      const ids = (list.body as { id: string }[]).map((s) => s.id);
      expect(ids).toContain(seen);
      expect(ids).not.toContain(gone);
      expect(rs.questions.length - asked).toBe(1);
      expect(rs.questions.at(-1)).toEqual(expect.arrayContaining([seen, gone]));

      const refused = await ackChannel(alice, gone, message.id);
      expect(refused.status).toBe(404);
      expect(refused.body).toEqual({ error: 'Channel not found' });
      const row = await h.runtime.pool.query('SELECT last_read_message_id FROM read_states WHERE user_id = $1 AND target_id = $2', [
        alice.id,
        gone,
      ]);
      expect(row.rows[0].last_read_message_id).toBeNull();
    } finally {
      rs.hidden.delete(`${alice.id}:${gone}`);
    }
    expect((await readStateOf(alice, gone))?.mentionCount).toBe(1);
  });

  it('answers 400 naming the field for a bad message id, 401 without a token, and changes nothing', async () => {
    const channelId = uuidv7();
    const bad = await h.call(alice, 'PUT', `/v1/channels/${channelId}/ack`, { messageId: 'nope' });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatch(/messageId/);
    expect((await h.call(alice, 'PUT', `/v1/channels/${channelId}/ack`, {})).status).toBe(400);
    expect((await h.call(undefined, 'PUT', `/v1/channels/${channelId}/ack`, { messageId: uuidv7() })).status).toBe(401);
    expect((await h.call(undefined, 'GET', '/v1/users/@me/read-states')).status).toBe(401);
    const rows = await h.runtime.pool.query('SELECT 1 FROM read_states WHERE target_id = $1', [channelId]);
    expect(rows.rowCount).toBe(0);
  });

  it('refuses an ack at an id from the future with 404: the mark stays, and a later mention still counts', async () => {
    const channelId = uuidv7();
    const seen = await posted(channelId, bob);
    expect((await ackChannel(alice, channelId, seen.id)).status).toBe(200);
    const future = uuidv7({ msecs: Date.now() + 3_600_000 });
    expect(await ackChannel(alice, channelId, future)).toMatchObject({ status: 404, body: { error: 'Message not found' } });
    expect(await ackChannel(alice, channelId, 'ffffffff-ffff-7fff-bfff-ffffffffffff')).toMatchObject({ status: 404 });
    await posted(channelId, bob, { user: [alice] });
    expect(await readStateOf(alice, channelId)).toMatchObject({ lastReadMessageId: seen.id, unread: true, mentionCount: 1 });
  });
});

describe('notification settings decide what counts as a mention', () => {
  const put = (user: User, body: object) => h.call(user, 'PUT', `/v1/users/@me/notification-settings/${serverId}`, body);

  it('answers the defaults when never set, and stores what is put', async () => {
    const carol = rs.joined(await h.addUser(), serverId);
    const fresh = await h.call(carol, 'GET', `/v1/users/@me/notification-settings/${serverId}`);
    expect(fresh.status).toBe(200);
    expect(fresh.body).toEqual({ serverId, level: 'all', muteUntil: null, channels: {} });
    const channelId = rs.channel(uuidv7(), serverId);
    const saved = await put(carol, { level: 'mentions', muteUntil: '2999-01-01T00:00:00.000Z', channels: { [channelId]: 'none' } });
    expect(saved.status).toBe(200);
    expect(saved.body).toEqual({ serverId, level: 'mentions', muteUntil: '2999-01-01T00:00:00.000Z', channels: { [channelId]: 'none' } });
    expect((await h.call(carol, 'GET', `/v1/users/@me/notification-settings/${serverId}`)).body).toEqual(saved.body);
    for (const body of [{ level: 'loud' }, {}, { level: 'all', channels: { 'not-a-uuid': 'all' } }, { level: 'all', muteUntil: 'soon' }]) {
      const res = await put(carol, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error).toEqual(expect.any(String));
    }
    expect((await h.call(carol, 'GET', `/v1/users/@me/notification-settings/${serverId}`)).body).toEqual(saved.body);
  });

  it('level none counts nothing, not even a direct mention', async () => {
    const carol = rs.joined(await h.addUser(), serverId);
    expect((await put(carol, { level: 'none' })).status).toBe(200);
    const channelId = uuidv7();
    await posted(channelId, bob, { user: [carol], everyone: [carol] });
    expect(await readStateOf(carol, channelId)).toBeUndefined();
  });

  it('a muted server still counts direct mentions and replies, not role or @everyone mentions; once the mute is over all count', async () => {
    const carol = rs.joined(await h.addUser(), serverId);
    expect((await put(carol, { level: 'all', muteUntil: '2999-01-01T00:00:00.000Z' })).status).toBe(200);
    const channelId = uuidv7();
    await posted(channelId, bob, { role: [carol] });
    await posted(channelId, bob, { everyone: [carol] });
    expect(await readStateOf(carol, channelId)).toBeUndefined();
    await posted(channelId, bob, { user: [carol] });
    await posted(channelId, bob, { reply: [carol] });
    expect((await readStateOf(carol, channelId))?.mentionCount).toBe(2);

    expect((await put(carol, { level: 'all', muteUntil: '2000-01-01T00:00:00.000Z' })).status).toBe(200);
    await posted(channelId, bob, { everyone: [carol] });
    expect((await readStateOf(carol, channelId))?.mentionCount).toBe(3);
  });

  it('a channel level given with an upper-case id applies to that channel: ids are stored and answered in lower case', async () => {
    const carol = rs.joined(await h.addUser(), serverId);
    const [quiet, loud] = [rs.channel(uuidv7(), serverId), rs.channel(uuidv7(), serverId)];
    const saved = await put(carol, { level: 'all', channels: { [quiet.toUpperCase()]: 'none', [loud.toUpperCase()]: 'mentions' } });
    expect(saved).toEqual({
      status: 200,
      body: { serverId, level: 'all', muteUntil: null, channels: { [quiet]: 'none', [loud]: 'mentions' } },
    });
    expect(await storedChannelLevels(carol)).toEqual([{ [quiet]: 'none', [loud]: 'mentions' }]);
    await posted(quiet, bob, { user: [carol] });
    await posted(loud, bob, { user: [carol] });
    expect(await readStateOf(carol, quiet)).toBeUndefined();
    expect((await readStateOf(carol, loud))?.mentionCount).toBe(1);

    // The server named in upper case in the path: the same settings, answered under the id as written everywhere.
    const upper = await h.call(carol, 'PUT', `/v1/users/@me/notification-settings/${serverId.toUpperCase()}`, { level: 'none' });
    expect(upper).toEqual({ status: 200, body: { serverId, level: 'none', muteUntil: null, channels: {} } });
    expect(await h.call(carol, 'GET', `/v1/users/@me/notification-settings/${serverId.toUpperCase()}`)).toEqual(upper);
    expect(await storedChannelLevels(carol)).toEqual([{}]);
  });

  it('migration 0012 lower-cases the channel ids of settings stored before it', async () => {
    const database = await createTestDatabase(inject('backing').postgresUrl, 'social_0012');
    const pool = createPool(database.url, 2);
    const before = await mkdtemp(join(tmpdir(), 'social-migrations-'));
    try {
      const migrations = new URL('../migrations', import.meta.url).pathname;
      for (const file of (await readdir(migrations)).filter((f) => f < '0012')) await copyFile(join(migrations, file), join(before, file));
      await migrate(pool, before);
      const [user, server, quiet, loud] = [uuidv7(), uuidv7(), uuidv7(), uuidv7()];
      const stored = { [quiet.toUpperCase()]: 'none', [loud]: 'mentions' };
      await pool.query(`INSERT INTO notification_settings (user_id, server_id, level, channels) VALUES ($1, $2, 'all', $3)`, [
        user,
        server,
        stored,
      ]);
      await pool.query(`INSERT INTO notification_settings (user_id, server_id, level) VALUES ($1, $2, 'none')`, [user, uuidv7()]);

      expect((await migrate(pool, migrations))[0]).toBe('service/0012_notification_settings.sql');
      const { rows } = await pool.query('SELECT channels FROM notification_settings WHERE user_id = $1 ORDER BY server_id = $2 DESC', [
        user,
        server,
      ]);
      expect(rows.map((r) => r.channels)).toEqual([{ [quiet]: 'none', [loud]: 'mentions' }, {}]);
    } finally {
      await pool.end();
      await database.drop();
      await rm(before, { recursive: true });
    }
  });

  it("a channel's own level wins over the server's", async () => {
    const carol = rs.joined(await h.addUser(), serverId);
    const [quiet, loud] = [rs.channel(uuidv7(), serverId), rs.channel(uuidv7(), serverId)];
    expect((await put(carol, { level: 'none', channels: { [quiet]: 'none', [loud]: 'mentions' } })).status).toBe(200);
    await posted(quiet, bob, { user: [carol] });
    await posted(loud, bob, { user: [carol] });
    expect(await readStateOf(carol, quiet)).toBeUndefined();
    expect((await readStateOf(carol, loud))?.mentionCount).toBe(1);
  });
});

describe('notification settings belong to a server the user is in', () => {
  const settingsPath = (id: string) => `/v1/users/@me/notification-settings/${id}`;
  const storedServers = async (user: User) =>
    (await h.runtime.pool.query('SELECT server_id FROM notification_settings WHERE user_id = $1 ORDER BY server_id', [user.id])).rows.map(
      (r) => r.server_id,
    );

  it('answers 404 to a GET or PUT for a server the caller never joined, an unknown one or a deleted one, and stores nothing', async () => {
    const dan = await h.addUser();
    const [othersServer, unknownServer, goneServer] = [uuidv7(), uuidv7(), uuidv7()];
    rs.joined(await h.addUser(), othersServer);
    rs.joined(dan, goneServer);
    rs.deleted(goneServer);
    for (const id of [othersServer, unknownServer, goneServer]) {
      expect(await h.call(dan, 'PUT', settingsPath(id), { level: 'none' }), id).toEqual({
        status: 404,
        body: { error: 'Server not found' },
      });
      expect(await h.call(dan, 'GET', settingsPath(id)), id).toEqual({ status: 404, body: { error: 'Server not found' } });
    }
    expect(await storedServers(dan)).toEqual([]);
  });

  it('are deleted with their server (guilds.server.deleted), everyone’s, and no other server’s', async () => {
    const [doomed, kept] = [uuidv7(), uuidv7()];
    const [erin, finn] = [rs.joined(rs.joined(await h.addUser(), doomed), kept), rs.joined(await h.addUser(), doomed)];
    for (const [user, id] of [
      [erin, doomed],
      [erin, kept],
      [finn, doomed],
    ] as const) {
      expect((await h.call(user, 'PUT', settingsPath(id), { level: 'mentions' })).status).toBe(200);
    }
    rs.deleted(doomed);
    await rs.publish('guilds.server.deleted', { id: doomed, memberIds: [erin.id, finn.id] });

    const settled = () => Promise.all([storedServers(erin), storedServers(finn)]);
    expect(await lastAttempt(settled, ([e, f]) => e.length === 1 && f.length === 0)).toEqual([[kept], []]);
    expect(await h.call(erin, 'GET', settingsPath(doomed))).toEqual({ status: 404, body: { error: 'Server not found' } });
    expect((await h.call(erin, 'GET', settingsPath(kept))).body).toMatchObject({ serverId: kept, level: 'mentions' });
  });

  it('are deleted when their user leaves the server (guilds.member.left), not those a rejoin wrote before the event applied', async () => {
    const place = uuidv7();
    const gus = rs.joined(await h.addUser(), place);
    expect((await h.call(gus, 'PUT', settingsPath(place), { level: 'none' })).status).toBe(200);
    rs.left(gus, place);
    const leftAt = new Date(Date.now() + 1_000).toISOString();
    await applied(await rs.publish('guilds.member.left', { serverId: place, userId: gus.id, reason: 'left', by: null }, leftAt));
    expect(await storedServers(gus)).toEqual([]);

    // Back in and set again; then a kick from before the rejoin is applied late (another consumer's lag).
    rs.joined(gus, place);
    expect((await h.call(gus, 'PUT', settingsPath(place), { level: 'mentions' })).status).toBe(200);
    const kickedAt = new Date(Date.now() - 60_000).toISOString();
    await applied(await rs.publish('guilds.member.left', { serverId: place, userId: gus.id, reason: 'kicked', by: uuidv7() }, kickedAt));
    expect(await storedServers(gus)).toEqual([place]);
    expect((await h.call(gus, 'GET', settingsPath(place))).body).toMatchObject({ level: 'mentions' });
  });
});

describe('conversation read states', () => {
  it('lists every conversation: the others’ messages past the mark count, acking clears them, only participants may ack', async () => {
    const conversation = await h.call(alice, 'POST', '/v1/dm/conversations', { userIds: [bob.id] });
    const id = conversation.body.id as string;
    const sent: string[] = [];
    for (const content of ['one', 'two']) {
      const res = await h.call(bob, 'POST', '/v1/dm/messages', { conversationId: id, content });
      expect(res.status).toBe(201);
      sent.push(res.body.id as string);
    }
    // Bob's own messages are read for him once social's consumer has seen them.
    await eventually(async () => (await readStateOf(bob, id))?.lastReadMessageId === sent[1]);
    expect(await readStateOf(bob, id)).toMatchObject({ kind: 'conversation', unread: false, mentionCount: 0 });
    expect(await readStateOf(alice, id)).toEqual({
      id,
      kind: 'conversation',
      lastReadMessageId: null,
      lastMessageId: sent[1],
      unread: true,
      mentionCount: 2,
    });
    const acked = await h.call(alice, 'PUT', `/v1/dm/conversations/${id}/ack`, { messageId: sent[0] });
    expect(acked.status).toBe(200);
    expect(acked.body).toMatchObject({ lastReadMessageId: sent[0], unread: true, mentionCount: 1 });

    const stranger = await h.addUser();
    const refused = await h.call(stranger, 'PUT', `/v1/dm/conversations/${id}/ack`, { messageId: sent[1] });
    expect(refused.status).toBe(404);
    expect(refused.body).toEqual({ error: 'Conversation not found' });
    expect((await readStateOf(alice, id))?.lastReadMessageId).toBe(sent[0]);
  });

  it('refuses with 404 an ack at an id that is no message of the conversation and newer than its last; a deleted one is fine', async () => {
    const other = await h.addUser();
    const id = (await h.call(alice, 'POST', '/v1/dm/conversations', { userIds: [bob.id] })).body.id as string;
    const elsewhere = (await h.call(alice, 'POST', '/v1/dm/conversations', { userIds: [other.id] })).body.id as string;
    const send = async (from: User, conversationId: string, content: string) => {
      const res = await h.call(from, 'POST', '/v1/dm/messages', { conversationId, content });
      expect(res.status).toBe(201);
      return res.body.id as string;
    };
    const [gone, first] = [await send(bob, id, 'to be deleted'), await send(bob, id, 'first')];
    expect((await h.call(bob, 'DELETE', `/v1/dm/messages/${gone}`)).status).toBe(204);
    expect((await h.call(alice, 'PUT', `/v1/dm/conversations/${id}/ack`, { messageId: gone })).status).toBe(200);
    const foreign = await send(alice, elsewhere, 'in another conversation');
    for (const messageId of [foreign, uuidv7(), 'ffffffff-ffff-7fff-bfff-ffffffffffff']) {
      const refused = await h.call(alice, 'PUT', `/v1/dm/conversations/${id}/ack`, { messageId });
      expect({ status: refused.status, body: refused.body }, messageId).toEqual({ status: 404, body: { error: 'Message not found' } });
    }
    expect((await h.call(alice, 'PUT', `/v1/dm/conversations/${id}/ack`, { messageId: first })).status).toBe(200);
    const later = await send(bob, id, 'later');
    expect(await readStateOf(alice, id)).toMatchObject({ lastReadMessageId: first, lastMessageId: later, unread: true });
  });
});

describe('conversation mentions and blocks', () => {
  it('does not count the messages of someone the user blocked, which the user does not see', async () => {
    const [ann, ben, dan] = [await h.addUser(), await h.addUser(), await h.addUser()];
    const group = await h.call(ann, 'POST', '/v1/dm/conversations', { userIds: [ben.id, dan.id] });
    expect(group.status).toBe(201);
    expect((await h.call(ann, 'POST', '/v1/friends/block', { userId: dan.id })).status).toBe(201);
    for (const [user, content] of [
      [dan, 'hidden from ann'],
      [ben, 'seen by ann'],
    ] as const) {
      expect((await h.call(user, 'POST', '/v1/dm/messages', { conversationId: group.body.id, content })).status).toBe(201);
    }
    expect(await readStateOf(ann, group.body.id)).toMatchObject({ unread: true, mentionCount: 1 });
  });

  it('leaves a blocked member’s newer message out of the blocker’s last message and unread, until the block is lifted', async () => {
    const [ann, ben, dan] = [await h.addUser(), await h.addUser(), await h.addUser()];
    expect((await h.call(ann, 'POST', '/v1/friends/block', { userId: dan.id })).status).toBe(201);
    // Ben puts the two together (a third person may: refusing would tell him of the block).
    const group = await h.call(ben, 'POST', '/v1/dm/conversations', { userIds: [ann.id, dan.id] });
    expect(group.status).toBe(201);
    const id = group.body.id as string;
    const seen = await h.call(ben, 'POST', '/v1/dm/messages', { conversationId: id, content: 'seen by ann' });
    expect(seen.status).toBe(201);
    expect((await h.call(ann, 'PUT', `/v1/dm/conversations/${id}/ack`, { messageId: seen.body.id })).status).toBe(200);
    const hidden = await h.call(dan, 'POST', '/v1/dm/messages', { conversationId: id, content: 'hidden from ann' });
    expect(hidden.status).toBe(201);

    // Its id would tell ann when dan posted (UUID v7), and a client compares it with the read mark.
    expect(await readStateOf(ann, id)).toEqual({
      id,
      kind: 'conversation',
      lastReadMessageId: seen.body.id,
      lastMessageId: seen.body.id,
      unread: false,
      mentionCount: 0,
    });
    expect(await readStateOf(ben, id)).toMatchObject({ lastMessageId: hidden.body.id, unread: true, mentionCount: 1 });

    expect((await h.call(ann, 'DELETE', `/v1/friends/block/${dan.id}`)).status).toBe(204);
    expect(await readStateOf(ann, id)).toMatchObject({ lastMessageId: hidden.body.id, unread: true, mentionCount: 1 });
  });
});

describe('a burst of channel messages (issue 18)', () => {
  it('moves heads and authors’ read marks to the newest of each in one transaction, whatever the order the events arrive in', async () => {
    const name = 'channelMessages';
    const [quiet, busy] = [uuidv7(), uuidv7()];
    // Ids in time order; published out of order, all while the consumer is stopped, so they arrive together.
    const [a1, b1, a2, q1] = [
      channelMessage(busy, alice),
      channelMessage(busy, bob),
      channelMessage(busy, alice),
      channelMessage(quiet, bob),
    ];
    await rs.stop(name);
    const events = [];
    for (const message of [a2, q1, a1, b1]) events.push(await rs.publish('guilds.message.created', message));
    await rs.start(name);
    for (const event of events) await applied(event);

    const heads = await h.runtime.pool.query(
      'SELECT channel_id, last_message_id, xmin::text AS tx FROM channel_heads WHERE channel_id = ANY($1)',
      [[quiet, busy]],
    );
    expect(Object.fromEntries(heads.rows.map((r) => [r.channel_id, r.last_message_id]))).toEqual({ [busy]: a2.id, [quiet]: q1.id });
    const marks = await h.runtime.pool.query(
      'SELECT user_id, target_id, last_read_message_id, xmin::text AS tx FROM read_states WHERE target_id = ANY($1) ORDER BY user_id, target_id',
      [[quiet, busy]],
    );
    const markOf = (user: User, channelId: string) =>
      marks.rows.find((r) => r.user_id === user.id && r.target_id === channelId)?.last_read_message_id;
    expect([markOf(alice, busy), markOf(bob, busy), markOf(bob, quiet)]).toEqual([a2.id, b1.id, q1.id]);
    // Written by one transaction: the batch's.
    expect(new Set([...heads.rows, ...marks.rows].map((r) => r.tx)).size).toBe(1);
  });
});

describe('a consumer that dies after its commit but before its ack', () => {
  it('applies the mention once: the redelivery is acked without running again', async () => {
    const name = 'channelMessages';
    const { durable } = READ_STATE_CONSUMERS[name];
    const runs = new Map<string, number>();
    const counting =
      (apply: ApplyEvent): ApplyEvent =>
      async (event, tx) => {
        runs.set(event.id, (runs.get(event.id) ?? 0) + 1);
        await apply(event, tx);
      };
    const channelId = uuidv7();
    const message = await posted(channelId, bob);
    await rs.stop(name);
    const batch = { messageId: message.id, channelId, serverId, authorId: bob.id, via: 'user', excerpt: 'x', createdAt: message.createdAt };
    const event = await rs.publish(READ_STATE_SUBJECTS.messageMentioned, { ...batch, userIds: [alice.id] });

    const bus = h.runtime.bus;
    const consumer = await bus.js.consumers.get(bus.name(STREAMS.guilds.name), bus.name(durable));
    const msg = await consumer.next({ expires: 5_000 });
    expect(msg?.json<EventEnvelope>().id).toBe(event.id);
    const envelope: EventEnvelope = { ...msg!.json<EventEnvelope>(), subject: bus.logical(msg!.subject) };
    expect(await applyOnce(h.runtime.pool, durable, envelope, counting(applierOf(name)))).toBe(true);
    const info = () => bus.jsm.consumers.info(bus.name(STREAMS.guilds.name), bus.name(durable));
    const deliveredAtCrash = (await info()).delivered.consumer_seq;
    // The nak stands in for the crash so that JetStream redelivers now rather than after ack_wait.
    msg!.nak();

    await rs.start(name, counting);
    await eventually(async () => {
      const now = await info();
      return now.delivered.consumer_seq > deliveredAtCrash && now.ack_floor.stream_seq >= msg!.info.streamSequence;
    });
    expect((await info()).num_ack_pending).toBe(0);
    expect(runs.get(event.id)).toBe(1);
    expect((await readStateOf(alice, channelId))?.mentionCount).toBe(1);
    const feed = await h.runtime.pool.query('SELECT 1 FROM notifications WHERE user_id = $1 AND message_id = $2', [alice.id, message.id]);
    expect(feed.rowCount).toBe(1);
  });
});
