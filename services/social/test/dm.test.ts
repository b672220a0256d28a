import { afterAll, describe, expect, it } from 'vitest';
import { createHarness, eventually, startPresenceStandIn } from './harness.ts';

const h = await createHarness();
afterAll(() => h.close());
const presence = await startPresenceStandIn(h.runtime);

type User = Awaited<ReturnType<typeof h.addUser>>;
const rows = async (sql: string, params: unknown[] = []) => (await h.runtime.pool.query(sql, params)).rows;

async function conversation(a: User, ...others: User[]): Promise<string> {
  const res = await h.call(a, 'POST', '/v1/dm/conversations', { userIds: others.map((o) => o.id) });
  expect([200, 201]).toContain(res.status);
  return res.body.id;
}

async function send(user: User, conversationId: string, body: Record<string, unknown> = {}) {
  return h.call(user, 'POST', '/v1/dm/messages', { conversationId, content: 'hello', ...body });
}

const messageCount = async (conversationId: string) =>
  Number((await rows('SELECT count(*) FROM direct_messages WHERE conversation_id = $1', [conversationId]))[0].count);

/** Whether a statement of this test's database waits for a row lock (a request queued behind a transaction held open). */
const waitingForALock = async () =>
  (await rows(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`))[0].n > 0;

describe('conversations', () => {
  it('maps a 1:1 pair to one conversation, from either side, created once', async () => {
    const alice = await h.addUser();
    const bob = await h.addUser();
    const created = await h.call(alice, 'POST', '/v1/dm/conversations', { userIds: [bob.id] });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      id: expect.any(String),
      type: 'direct',
      ownerId: null,
      participants: expect.arrayContaining([
        { id: alice.id, username: alice.username, displayName: alice.displayName, avatarUrl: null, status: 'offline' },
        { id: bob.id, username: bob.username, displayName: bob.displayName, avatarUrl: null, status: 'offline' },
      ]),
      lastMessage: null,
      lastActivityAt: expect.any(String),
      createdAt: expect.any(String),
      call: null,
    });
    expect(created.body.participants).toHaveLength(2);

    const again = await h.call(alice, 'POST', '/v1/dm/conversations', { userIds: [bob.id, alice.id] });
    const reverse = await h.call(bob, 'POST', '/v1/dm/conversations', { userIds: [alice.id] });
    expect([again.status, reverse.status]).toEqual([200, 200]);
    expect([again.body.id, reverse.body.id]).toEqual([created.body.id, created.body.id]);
    const created_events = (await h.events('social.conversation.created')).filter((e) => e.data.conversationId === created.body.id);
    expect(created_events).toHaveLength(1);
    // The socket's DM_CONVERSATION_CREATE: the conversation as the list shows it, each participant's status the gateway's.
    const withoutStatus = (created.body.participants as { status: string }[]).map(({ status: _status, ...user }) => user);
    expect(created_events[0]?.data.conversation).toEqual({ ...created.body, participants: withoutStatus });
  });

  it('creates one conversation when both sides open it at the same moment', async () => {
    const alice = await h.addUser();
    const bob = await h.addUser();
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        i % 2
          ? h.call(alice, 'POST', '/v1/dm/conversations', { userIds: [bob.id] })
          : h.call(bob, 'POST', '/v1/dm/conversations', { userIds: [alice.id] }),
      ),
    );
    expect(new Set(answers.map((a) => a.body.id)).size).toBe(1);
    expect(answers.filter((a) => a.status === 201)).toHaveLength(1);
    const pairs = await rows('SELECT id FROM conversations WHERE pair_key = $1', [[alice.id, bob.id].sort().join(':')]);
    expect(pairs).toHaveLength(1);
  });

  it('makes a new group of up to ten people each time', async () => {
    const owner = await h.addUser();
    const members = await Promise.all(Array.from({ length: 9 }, () => h.addUser()));
    const group = await h.call(owner, 'POST', '/v1/dm/conversations', { userIds: members.map((m) => m.id) });
    expect(group.status).toBe(201);
    expect(group.body).toMatchObject({ type: 'group', ownerId: owner.id });
    expect(group.body.participants).toHaveLength(10);
    const second = await h.call(owner, 'POST', '/v1/dm/conversations', { userIds: members.slice(0, 2).map((m) => m.id) });
    expect(second.status).toBe(201);
    expect(second.body.id).not.toBe(group.body.id);

    const extra = await h.addUser();
    const tooMany = await h.call(owner, 'POST', '/v1/dm/conversations', { userIds: [...members, extra].map((m) => m.id) });
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.error).toMatch(/userIds/);
  });

  it('answers 404 for an unknown user or one who blocked you, 400 for only yourself, 403 for one you blocked, and creates nothing', async () => {
    const alice = await h.addUser();
    const bob = await h.addUser();
    const before = (await rows('SELECT count(*) FROM conversations'))[0].count;
    expect(await h.call(alice, 'POST', '/v1/dm/conversations', { userIds: [bob.id, crypto.randomUUID()] })).toEqual({
      status: 404,
      body: { error: 'User not found' },
    });
    expect((await h.call(alice, 'POST', '/v1/dm/conversations', { userIds: [alice.id] })).status).toBe(400);
    expect((await h.call(alice, 'POST', '/v1/dm/conversations', { userIds: [] })).status).toBe(400);
    await h.call(bob, 'POST', '/v1/friends/block', { userId: alice.id });
    expect((await h.call(alice, 'POST', '/v1/dm/conversations', { userIds: [bob.id] })).status).toBe(404);
    expect((await h.call(bob, 'POST', '/v1/dm/conversations', { userIds: [alice.id] })).status).toBe(403);
    expect((await rows('SELECT count(*) FROM conversations'))[0].count).toBe(before);
  });

  it('lists mine by most recent activity, each with its last message, and hides others', async () => {
    const me = await h.addUser();
    const [a, b] = [await h.addUser(), await h.addUser()];
    const withA = await conversation(me, a);
    const withB = await conversation(me, b);
    await send(a, withA, { content: 'older' });
    await send(b, withB, { content: 'newer' });
    await send(me, withA, { content: 'newest' });

    const list = await h.call(me, 'GET', '/v1/dm/conversations');
    expect(list.status).toBe(200);
    expect(list.body.map((c: { id: string }) => c.id)).toEqual([withA, withB]);
    expect(list.body[0].lastMessage).toMatchObject({ content: 'newest', senderId: me.id, reactions: {} });
    expect(list.body[1].lastMessage).toMatchObject({ content: 'newer', senderId: b.id });

    const one = await h.call(me, 'GET', `/v1/dm/conversations/${withB}`);
    expect(one).toEqual({ status: 200, body: list.body[1] });
    expect((await h.call(a, 'GET', '/v1/dm/conversations')).body.map((c: { id: string }) => c.id)).toEqual([withA]);
    expect(await h.call(a, 'GET', `/v1/dm/conversations/${withB}`)).toEqual({ status: 404, body: { error: 'Conversation not found' } });
  });
});

describe('sending messages', () => {
  it('answers 201 with every spec field, sender fields from the read-model, and writes the message and its event', async () => {
    const alice = await h.addUser({ displayName: 'Alice A.', avatarUrl: 'https://cdn.example/a.png', badges: ['founder'] });
    const bob = await h.addUser();
    const id = await conversation(alice, bob);
    const res = await send(alice, id, { content: 'hi bob' });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{14}7/),
      conversationId: id,
      senderId: alice.id,
      content: 'hi bob',
      attachments: {},
      replyToId: null,
      editedAt: null,
      createdAt: expect.any(String),
      senderName: 'Alice A.',
      senderAvatar: 'https://cdn.example/a.png',
      senderBadges: ['founder'],
      reactions: {},
      type: 'default',
      embeds: [],
      call: null,
    });
    expect(await rows('SELECT sender_id, content FROM direct_messages WHERE id = $1', [res.body.id])).toEqual([
      { sender_id: alice.id, content: 'hi bob' },
    ]);
    const [event] = (await h.events('social.dm.created')).filter((e) => (e.data.message as { id: string }).id === res.body.id);
    const { reactions: _, ...withoutReactions } = res.body;
    expect(event?.data).toEqual({ message: withoutReactions, participantIds: [alice.id, bob.id].sort() });
  });

  it('rejects empty, blank and too long content without attachments', async () => {
    const alice = await h.addUser();
    const id = await conversation(alice, await h.addUser());
    expect((await send(alice, id, { content: '' })).status).toBe(400);
    expect((await send(alice, id, { content: '   ' })).status).toBe(400);
    expect((await h.call(alice, 'POST', '/v1/dm/messages', { conversationId: id })).status).toBe(400);
    expect((await send(alice, id, { content: 'x'.repeat(4001) })).body).toEqual({ error: expect.stringContaining('content') });
    expect((await send(alice, id, { content: 'x'.repeat(4000) })).status).toBe(201);
    expect(await messageCount(id)).toBe(1);
  });

  it('keeps the media service record of each attachment, not what the client claimed', async () => {
    const alice = await h.addUser();
    const id = await conversation(alice, await h.addUser());
    const file = h.media.upload(alice.id, 'cat.png', 'image/png', 2048);
    const claimed = { url: `/v1/media/${file.id}/cat.html`, filename: 'cat.html', contentType: 'text/html', size: 1 };
    const res = await send(alice, id, { content: '', attachments: { cat: claimed } });
    expect(res.status).toBe(201);
    const stored = { url: file.url, filename: 'cat.png', contentType: 'image/png', size: 2048 };
    expect(res.body.attachments).toEqual({ cat: stored });
    expect(await rows('SELECT attachments FROM direct_messages WHERE id = $1', [res.body.id])).toEqual([{ attachments: { cat: stored } }]);
  });

  it("answers 400 for an attachment that is unknown, someone else's, or not a media url", async () => {
    const alice = await h.addUser();
    const bob = await h.addUser();
    const id = await conversation(alice, bob);
    const bobsFile = h.media.upload(bob.id);
    const attachment = (url: string) => ({ f: { url, filename: 'a', contentType: 'image/png', size: 1 } });
    for (const url of [`/v1/media/${crypto.randomUUID()}/a.png`, bobsFile.url, 'https://elsewhere.example/a.png']) {
      const res = await send(alice, id, { attachments: attachment(url) });
      expect(res.status).toBe(400);
      expect(res.body.error).toMatch(/^body\.attachments\.f: /);
    }
    expect(await messageCount(id)).toBe(0);
  });

  it('types a reply as reply and echoes the nonce in the answer and the created event only', async () => {
    const alice = await h.addUser();
    const bob = await h.addUser();
    const id = await conversation(alice, bob);
    const first = (await send(alice, id, { content: 'question?', nonce: 'client-42' })).body;
    expect(first).toMatchObject({ type: 'default', nonce: 'client-42' });
    const reply = (await send(bob, id, { content: 'answer', replyToId: first.id })).body;
    expect(reply.type).toBe('reply');
    expect(reply).not.toHaveProperty('nonce');
    expect(await rows('SELECT type FROM direct_messages WHERE conversation_id = $1 ORDER BY id', [id])).toEqual([
      { type: 'default' },
      { type: 'reply' },
    ]);
    const events = await h.events('social.dm.created');
    const created = events.find((e) => (e.data.message as { id: string }).id === first.id);
    expect(created?.data.message).toMatchObject({ type: 'default', nonce: 'client-42' });
    const listed = (await h.call(alice, 'GET', `/v1/dm/conversations/${id}/messages`)).body;
    expect(listed.map((m: { type: string }) => m.type)).toEqual(['reply', 'default']);
    expect(listed[1]).not.toHaveProperty('nonce');
    for (const nonce of ['x'.repeat(26), 42]) {
      const res = await send(alice, id, { content: 'hi', nonce });
      expect(res.status).toBe(400);
      expect(res.body.error).toMatch(/nonce/);
    }
    expect(await messageCount(id)).toBe(2);
  });

  it('accepts a reply to a message of the same conversation only', async () => {
    const alice = await h.addUser();
    const bob = await h.addUser();
    const carol = await h.addUser();
    const withBob = await conversation(alice, bob);
    const withCarol = await conversation(alice, carol);
    const first = await send(bob, withBob);
    const elsewhere = await send(carol, withCarol);

    const reply = await send(alice, withBob, { replyToId: first.body.id });
    expect(reply.status).toBe(201);
    expect(reply.body.replyToId).toBe(first.body.id);
    const wrong = await send(alice, withBob, { replyToId: elsewhere.body.id });
    expect(wrong).toEqual({ status: 400, body: { error: 'body.replyToId: no such message in this conversation' } });
    expect((await send(alice, withBob, { replyToId: crypto.randomUUID() })).status).toBe(400);
    expect(await messageCount(withBob)).toBe(2);
  });

  it('answers 400 to a reply whose message is being deleted, once the delete commits, and stores nothing', async () => {
    const alice = await h.addUser();
    const bob = await h.addUser();
    const id = await conversation(alice, bob);
    const doomed = (await send(alice, id, { content: 'doomed' })).body.id;
    // The delete has the message's row and has not committed: the reply checks its target meanwhile.
    const deleting = await h.runtime.pool.connect();
    let answered = false;
    try {
      await deleting.query('BEGIN');
      await deleting.query('DELETE FROM direct_messages WHERE id = $1', [doomed]);
      const replying = send(bob, id, { content: 'reply', replyToId: doomed }).then((res) => {
        answered = true;
        return res;
      });
      await eventually(async () => answered || (await waitingForALock()), { what: 'the reply waits for the delete' });
      await deleting.query('COMMIT');
      expect(await replying).toEqual({ status: 400, body: { error: 'body.replyToId: no such message in this conversation' } });
    } finally {
      await deleting.query('ROLLBACK').catch(() => {});
      deleting.release();
    }
    expect(await messageCount(id)).toBe(0);
    const posted = (await h.events('social.dm.created')).filter(
      (e) => (e.data.message as { conversationId: string }).conversationId === id,
    );
    expect(posted).toHaveLength(1);
  });

  it('answers 403 between a blocked pair, in both directions, until the block is lifted', async () => {
    const alice = await h.addUser();
    const bob = await h.addUser();
    const id = await conversation(alice, bob);
    await h.call(alice, 'POST', '/v1/friends/block', { userId: bob.id });
    expect(await send(bob, id)).toEqual({ status: 403, body: { error: expect.stringContaining('blocked') } });
    expect((await send(alice, id)).status).toBe(403);
    expect(await messageCount(id)).toBe(0);
    await h.call(alice, 'DELETE', `/v1/friends/block/${bob.id}`);
    expect((await send(bob, id)).status).toBe(201);
  });
});

describe('participants’ statuses (what the gateway answers)', () => {
  const statusesIn = (c: { participants: { id: string; status: string }[] }) =>
    Object.fromEntries(c.participants.map((p) => [p.id, p.status]));

  it('a conversation a stranger opens shows each participant as the gateway shows them to the caller', async () => {
    const [stranger, victim] = [await h.addUser(), await h.addUser()];
    presence.live.set(stranger.id, 'online');
    presence.live.set(victim.id, 'dnd');
    const asked = presence.questions.length;

    const opened = await h.call(stranger, 'POST', '/v1/dm/conversations', { userIds: [victim.id] });
    expect(opened.status).toBe(201);
    const id = opened.body.id as string;
    expect(statusesIn(opened.body)).toEqual({ [stranger.id]: 'online', [victim.id]: 'offline' });
    const listed = await h.call(stranger, 'GET', '/v1/dm/conversations');
    expect(listed.status).toBe(200);
    expect(listed.body.map(statusesIn)).toEqual([{ [stranger.id]: 'online', [victim.id]: 'offline' }]);
    const theirs = await h.call(victim, 'GET', `/v1/dm/conversations/${id}`);
    expect(theirs.status).toBe(200);
    expect(statusesIn(theirs.body)).toEqual({ [stranger.id]: 'offline', [victim.id]: 'dnd' });
    const viewers = presence.questions.slice(asked).map((q) => q.viewerId);
    expect(viewers).toEqual([stranger.id, stranger.id, victim.id]);
    expect(await rows('SELECT user_id FROM conversation_participants WHERE conversation_id = $1 ORDER BY user_id', [id])).toEqual(
      [stranger.id, victim.id].sort().map((user_id) => ({ user_id })),
    );

    // In a server together, the gateway shows each the other's live status: the conversation shows its answer.
    presence.acquaint(stranger.id, victim.id);
    expect(statusesIn((await h.call(stranger, 'GET', `/v1/dm/conversations/${id}`)).body)).toEqual({
      [stranger.id]: 'online',
      [victim.id]: 'dnd',
    });
  });
});

describe('a non-participant', () => {
  it('can neither read nor write the conversation or its messages', async () => {
    const alice = await h.addUser();
    const bob = await h.addUser();
    const eve = await h.addUser();
    const id = await conversation(alice, bob);
    const message = await send(alice, id, { content: 'private' });
    const mid = message.body.id;

    const answers = [
      await h.call(eve, 'GET', `/v1/dm/conversations/${id}`),
      await h.call(eve, 'GET', `/v1/dm/conversations/${id}/messages`),
      await send(eve, id),
      await h.call(eve, 'PATCH', `/v1/dm/messages/${mid}`, { content: 'hacked' }),
      await h.call(eve, 'DELETE', `/v1/dm/messages/${mid}`),
      await h.call(eve, 'PUT', `/v1/dm/messages/${mid}/reactions/%F0%9F%91%8D/@me`),
      await h.call(eve, 'DELETE', `/v1/dm/messages/${mid}/reactions/%F0%9F%91%8D/@me`),
    ];
    expect(answers.map((a) => a.status)).toEqual([404, 404, 404, 404, 404, 404, 404]);
    for (const a of answers) expect(a.body).toEqual({ error: expect.stringMatching(/not found$/) });
    expect(await rows('SELECT content, edited_at FROM direct_messages WHERE conversation_id = $1', [id])).toEqual([
      { content: 'private', edited_at: null },
    ]);
    expect(await rows('SELECT 1 FROM dm_reactions WHERE message_id = $1', [mid])).toEqual([]);
    expect((await h.call(undefined, 'GET', `/v1/dm/conversations/${id}/messages`)).status).toBe(401);
  });
});

describe('paging', () => {
  it('pages back with before and forward with after, newest first, without gaps or repeats while messages arrive', async () => {
    const alice = await h.addUser();
    const bob = await h.addUser();
    const id = await conversation(alice, bob);
    for (let i = 1; i <= 7; i++) await send(i % 2 ? alice : bob, id, { content: `m${i}` });
    const contents = (res: { body: { content: string }[] }) => res.body.map((m) => m.content);

    const page1 = await h.call(alice, 'GET', `/v1/dm/conversations/${id}/messages?limit=3`);
    expect(contents(page1)).toEqual(['m7', 'm6', 'm5']);
    await send(bob, id, { content: 'm8' }); // arrives while paging back
    const page2 = await h.call(alice, 'GET', `/v1/dm/conversations/${id}/messages?limit=3&before=${page1.body[2].id}`);
    expect(contents(page2)).toEqual(['m4', 'm3', 'm2']);
    const page3 = await h.call(alice, 'GET', `/v1/dm/conversations/${id}/messages?limit=3&before=${page2.body[2].id}`);
    expect(contents(page3)).toEqual(['m1']);

    const forward = await h.call(alice, 'GET', `/v1/dm/conversations/${id}/messages?limit=2&after=${page2.body[0].id}`);
    expect(contents(forward)).toEqual(['m6', 'm5']);
    const newest = await h.call(alice, 'GET', `/v1/dm/conversations/${id}/messages?after=${page1.body[0].id}`);
    expect(contents(newest)).toEqual(['m8']);
    expect((await h.call(alice, 'GET', `/v1/dm/conversations/${id}/messages`)).body).toHaveLength(8);
  });

  it('keeps ids in commit order when many messages arrive at once', async () => {
    const alice = await h.addUser();
    const bob = await h.addUser();
    const id = await conversation(alice, bob);
    const sent = await Promise.all(Array.from({ length: 20 }, (_, i) => send(i % 2 ? alice : bob, id, { content: `c${i}` })));
    expect(sent.every((s) => s.status === 201)).toBe(true);
    const all = await h.call(bob, 'GET', `/v1/dm/conversations/${id}/messages?limit=100`);
    expect(all.body).toHaveLength(20);
    const seen = await h.call(bob, 'GET', `/v1/dm/conversations/${id}`);
    expect(seen.body.lastMessage.id).toBe(all.body[0].id);
    expect(seen.body.lastActivityAt).toBe(all.body[0].createdAt);
    const ids = all.body.map((m: { id: string }) => m.id);
    expect([...ids].sort().reverse()).toEqual(ids);
  });

  it('answers 400 for a bad limit, a bad cursor, or both cursors', async () => {
    const alice = await h.addUser();
    const id = await conversation(alice, await h.addUser());
    const base = `/v1/dm/conversations/${id}/messages`;
    for (const q of ['limit=0', 'limit=101', 'limit=x', 'before=nope', `before=${crypto.randomUUID()}&after=${crypto.randomUUID()}`]) {
      const res = await h.call(alice, 'GET', `${base}?${q}`);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error: expect.any(String) });
    }
    expect((await h.call(alice, 'GET', `${base}?limit=100`)).status).toBe(200);
  });
});

describe('editing and deleting', () => {
  it('lets the sender edit (setting editedAt) and nobody else', async () => {
    const alice = await h.addUser();
    const bob = await h.addUser();
    const id = await conversation(alice, bob);
    const mid = (await send(alice, id, { content: 'draft' })).body.id;

    expect(await h.call(bob, 'PATCH', `/v1/dm/messages/${mid}`, { content: 'mine now' })).toEqual({
      status: 403,
      body: { error: 'You can only change your own messages' },
    });
    expect((await h.call(alice, 'PATCH', `/v1/dm/messages/${mid}`, { content: ' ' })).status).toBe(400);
    expect((await h.call(alice, 'PATCH', `/v1/dm/messages/${crypto.randomUUID()}`, { content: 'x' })).status).toBe(404);
    const edited = await h.call(alice, 'PATCH', `/v1/dm/messages/${mid}`, { content: 'final' });
    expect(edited.status).toBe(200);
    expect(edited.body).toMatchObject({ id: mid, content: 'final', editedAt: expect.any(String), reactions: {} });
    expect(await rows('SELECT content FROM direct_messages WHERE id = $1', [mid])).toEqual([{ content: 'final' }]);
    const updates = (await h.events('social.dm.updated')).filter((e) => (e.data.message as { id: string }).id === mid);
    expect(updates.map((e) => (e.data.message as { content: string }).content)).toEqual(['final']);
  });

  it('lets the sender delete and nobody else', async () => {
    const alice = await h.addUser();
    const bob = await h.addUser();
    const id = await conversation(alice, bob);
    const first = (await send(alice, id, { content: 'one' })).body.id;
    const mid = (await send(alice, id, { content: 'two' })).body.id;

    expect((await h.call(bob, 'DELETE', `/v1/dm/messages/${mid}`)).status).toBe(403);
    expect(await h.call(alice, 'DELETE', `/v1/dm/messages/${mid}`)).toEqual({ status: 204, body: undefined });
    expect(await rows('SELECT 1 FROM direct_messages WHERE id = $1', [mid])).toEqual([]);
    expect((await h.call(alice, 'DELETE', `/v1/dm/messages/${mid}`)).status).toBe(404);
    expect((await h.call(bob, 'GET', `/v1/dm/conversations/${id}`)).body.lastMessage.id).toBe(first);
    const deleted = (await h.events('social.dm.deleted')).filter((e) => e.data.id === mid);
    expect(deleted.map((e) => e.data)).toEqual([{ id: mid, conversationId: id, participantIds: [alice.id, bob.id].sort() }]);
  });
});

describe('reactions', () => {
  it('takes at most 20 distinct emoji per message: a new 21st is a 400 and changes nothing', async () => {
    const alice = await h.addUser();
    const bob = await h.addUser();
    const id = await conversation(alice, bob);
    const mid = (await send(alice, id)).body.id;
    const react = (user: User, emoji: string) => h.call(user, 'PUT', `/v1/dm/messages/${mid}/reactions/${emoji}/@me`);
    for (let i = 0; i < 20; i++) expect((await react(i % 2 ? alice : bob, `e${i}:${i}`)).status).toBe(204);
    const events = (await h.events('social.dm.reaction.added')).length;
    expect(await react(bob, 'e20:20')).toEqual({ status: 400, body: { error: 'Maximum number of reactions reached (20)' } });
    expect((await react(alice, 'e0:0')).status).toBe(204);
    expect(
      await rows('SELECT count(DISTINCT emoji)::int AS n, count(*)::int AS total FROM dm_reactions WHERE message_id = $1', [mid]),
    ).toEqual([{ n: 20, total: 21 }]);
    expect((await h.events('social.dm.reaction.added')).length).toBe(events + 1);
  });

  it('shows {emoji: {count, me}} per viewer; PUT and DELETE are idempotent', async () => {
    const alice = await h.addUser();
    const bob = await h.addUser();
    const id = await conversation(alice, bob);
    const mid = (await send(alice, id)).body.id;
    const thumbs = `/v1/dm/messages/${mid}/reactions/${encodeURIComponent('👍')}/@me`;
    const reactionsSeenBy = async (user: User) => (await h.call(user, 'GET', `/v1/dm/conversations/${id}/messages`)).body[0].reactions;

    expect(await h.call(bob, 'PUT', thumbs)).toEqual({ status: 204, body: undefined });
    expect((await h.call(bob, 'PUT', thumbs)).status).toBe(204);
    expect(await reactionsSeenBy(bob)).toEqual({ '👍': { count: 1, me: true } });
    expect(await reactionsSeenBy(alice)).toEqual({ '👍': { count: 1, me: false } });

    await h.call(alice, 'PUT', thumbs);
    await h.call(alice, 'PUT', `/v1/dm/messages/${mid}/reactions/party:123/@me`);
    expect(await reactionsSeenBy(alice)).toEqual({ '👍': { count: 2, me: true }, 'party:123': { count: 1, me: true } });

    expect((await h.call(bob, 'DELETE', thumbs)).status).toBe(204);
    expect((await h.call(bob, 'DELETE', thumbs)).status).toBe(204);
    expect(await reactionsSeenBy(bob)).toEqual({ '👍': { count: 1, me: false }, 'party:123': { count: 1, me: false } });
    const events = (await h.events()).filter((e) => e.subject.startsWith('social.dm.reaction') && e.data.messageId === mid);
    expect(events.map((e) => [e.subject, e.data.userId, e.data.emoji])).toEqual([
      ['social.dm.reaction.added', bob.id, '👍'],
      ['social.dm.reaction.added', alice.id, '👍'],
      ['social.dm.reaction.added', alice.id, 'party:123'],
      ['social.dm.reaction.removed', bob.id, '👍'],
    ]);
  });

  it('answers 400 for a malformed emoji and 403 across a block', async () => {
    const alice = await h.addUser();
    const bob = await h.addUser();
    const id = await conversation(alice, bob);
    const mid = (await send(alice, id)).body.id;
    expect((await h.call(bob, 'PUT', `/v1/dm/messages/${mid}/reactions/${'x'.repeat(65)}/@me`)).status).toBe(400);
    expect((await h.call(bob, 'PUT', `/v1/dm/messages/${mid}/reactions/a%20b/@me`)).status).toBe(400);
    await h.call(alice, 'POST', '/v1/friends/block', { userId: bob.id });
    expect((await h.call(bob, 'PUT', `/v1/dm/messages/${mid}/reactions/${encodeURIComponent('👍')}/@me`)).status).toBe(403);
    expect(await rows('SELECT 1 FROM dm_reactions WHERE message_id = $1', [mid])).toEqual([]);
  });

  it('answers 400 to a reaction that is neither a unicode emoji nor a custom name:id, as channels do, and stores nothing', async () => {
    const alice = await h.addUser();
    const bob = await h.addUser();
    const id = await conversation(alice, bob);
    const mid = (await send(alice, id)).body.id;
    const events = (await h.events()).filter((e) => e.subject.startsWith('social.dm.reaction')).length;
    for (const emoji of ['notanemoji', encodeURIComponent('<script>'), 'party:', encodeURIComponent('👍👍')]) {
      for (const method of ['PUT', 'DELETE'] as const) {
        const res = await h.call(bob, method, `/v1/dm/messages/${mid}/reactions/${emoji}/@me`);
        expect(res, `${method} ${emoji}`).toEqual({ status: 400, body: { error: expect.stringContaining('emoji') } });
      }
    }
    expect(await rows('SELECT emoji FROM dm_reactions WHERE message_id = $1', [mid])).toEqual([]);
    expect((await h.events()).filter((e) => e.subject.startsWith('social.dm.reaction')).length).toBe(events);
    expect((await h.call(alice, 'GET', `/v1/dm/conversations/${id}/messages`)).body[0].reactions).toEqual({});
  });

  it('still shows a reaction stored before emoji were checked', async () => {
    const alice = await h.addUser();
    const bob = await h.addUser();
    const id = await conversation(alice, bob);
    const mid = (await send(alice, id)).body.id;
    await rows('INSERT INTO dm_reactions (message_id, user_id, emoji) VALUES ($1, $2, $3)', [mid, bob.id, 'notanemoji']);
    const listed = await h.call(alice, 'GET', `/v1/dm/conversations/${id}/messages`);
    expect(listed.status).toBe(200);
    expect(listed.body[0].reactions).toEqual({ notanemoji: { count: 1, me: false } });
  });
});

// Last: it takes the media stand-in off the bus.
describe('when the media service is down', () => {
  it('answers 503 to a message with attachments and writes nothing; plain messages still work', async () => {
    const alice = await h.addUser();
    const id = await conversation(alice, await h.addUser());
    const file = h.media.upload(alice.id);
    await h.media.stop();
    const res = await send(alice, id, { attachments: { f: { url: file.url, filename: 'a', contentType: 'image/png', size: 1 } } });
    expect(res).toEqual({ status: 503, body: { error: 'Service unavailable' } });
    expect(await messageCount(id)).toBe(0);
    expect((await send(alice, id)).status).toBe(201);
  });
});
