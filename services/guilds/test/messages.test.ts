import { Permission, toMask } from '@chat/contracts';
import { startMediaStandIn } from '@chat/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NO_MENTIONS } from '../src/domain/mentions.ts';
import { postMessage } from '../src/domain/messages.ts';
import { newId, startGuilds } from './harness.ts';

const g = await startGuilds();
const media = await startMediaStandIn(g.runtime);
afterAll(async () => {
  await media.stop();
  await g.close();
});

const mask = (...bits: bigint[]) => toMask(bits.reduce((a, b) => a | b, 0n));

let owner: string;
let alice: string;
let bob: string;
let mod: string;
const stranger = newId();
let server: { id: string };
let general: string;
let voice: string;
let secret: string;
let modRole: string;

const messages = (channelId: string) => `/v1/channels/${channelId}/messages`;
const post = (userId: string, channelId: string, payload: unknown) => g.call(userId, 'POST', messages(channelId), payload);
const rowCount = async (channelId: string) =>
  Number((await g.db.query('SELECT count(*) FROM messages WHERE channel_id = $1', [channelId])).rows[0].count);
const newChannel = async (name: string) =>
  (await g.call(owner, 'POST', `/v1/servers/${server.id}/channels`, { name, channelType: 'text' })).body.id as string;
const override = async (channelId: string, target: { userId?: string; roleId?: string }, allow: bigint, deny: bigint) => {
  const res = await g.call(owner, 'PUT', `/v1/channels/${channelId}/permissions`, {
    ...target,
    allowBits: toMask(allow),
    denyBits: toMask(deny),
  });
  expect(res.status).toBe(200);
};

beforeAll(async () => {
  [owner, alice, bob, mod] = await Promise.all([g.knownUser('owner'), g.knownUser('alice'), g.knownUser('bob'), g.knownUser('mod')]);
  server = (await g.call(owner, 'POST', '/v1/servers', { name: 'Messages', isPublic: true })).body;
  for (const user of [alice, bob, mod]) expect((await g.call(user, 'POST', `/v1/servers/${server.id}/join`)).status).toBe(200);
  const channels = (await g.call(owner, 'GET', `/v1/servers/${server.id}/channels`)).body as { id: string; channelType: string }[];
  general = channels.find((c) => c.channelType === 'text')!.id;
  voice = channels.find((c) => c.channelType === 'voice')!.id;
  secret = await newChannel('secret');
  await override(secret, { roleId: server.id }, 0n, Permission.VIEW_CHANNEL);
  const role = await g.call(owner, 'POST', `/v1/servers/${server.id}/roles`, {
    name: 'mods',
    permissions: mask(Permission.MANAGE_MESSAGES),
  });
  modRole = role.body.id;
  expect((await g.call(owner, 'PUT', `/v1/servers/${server.id}/members/${mod}/roles/${modRole}`)).status).toBeLessThan(300);
});

describe('posting', () => {
  it('answers 201 with every field, the author from the read-model, and writes the event', async () => {
    const res = await post(alice, general, { content: 'hello there' });
    expect(res.status).toBe(201);
    const aliceRow = (await g.db.query('SELECT display_name FROM users WHERE id = $1', [alice])).rows[0];
    expect(res.body).toEqual({
      id: expect.any(String),
      channelId: general,
      serverId: server.id,
      authorId: alice,
      authorName: aliceRow.display_name,
      authorAvatar: null,
      content: 'hello there',
      attachments: {},
      replyToId: null,
      mentions: { users: [], roles: [], everyone: false },
      pinned: false,
      editedAt: null,
      createdAt: expect.any(String),
      reactions: {},
      webhookId: null,
      type: 'default',
      embeds: [],
    });
    expect((await g.db.query('SELECT content, author_id FROM messages WHERE id = $1', [res.body.id])).rows).toEqual([
      { content: 'hello there', author_id: alice },
    ]);
    const event = (await g.outbox('guilds.message.created')).find((e) => e.data.id === res.body.id);
    expect(event?.data).toMatchObject({ channelId: general, authorId: alice, content: 'hello there' });
    expect(event?.data).not.toHaveProperty('reactions');
  });

  it('takes a reply to a message of the same channel only', async () => {
    const first = (await post(alice, general, { content: 'question?' })).body;
    const reply = await post(bob, general, { content: 'answer', replyToId: first.id });
    expect(reply.status).toBe(201);
    expect(reply.body.replyToId).toBe(first.id);
    const elsewhere = (await post(owner, secret, { content: 'hidden' })).body;
    const before = await rowCount(general);
    for (const replyToId of [elsewhere.id, newId()]) {
      const res = await post(bob, general, { content: 'answer', replyToId });
      expect(res.status).toBe(400);
      expect(res.body.error).toMatch(/replyToId/);
    }
    expect(await rowCount(general)).toBe(before);
  });

  it('types a reply as reply and echoes the nonce in the answer and the created event only', async () => {
    const first = (await post(alice, general, { content: 'question?', nonce: 'client-42' })).body;
    expect(first).toMatchObject({ type: 'default', nonce: 'client-42' });
    const reply = (await post(bob, general, { content: 'answer', replyToId: first.id })).body;
    expect(reply.type).toBe('reply');
    expect(reply).not.toHaveProperty('nonce');
    const stored = await g.db.query('SELECT id, type FROM messages WHERE id = ANY($1::uuid[]) ORDER BY id', [[first.id, reply.id]]);
    expect(stored.rows).toEqual([
      { id: first.id, type: 'default' },
      { id: reply.id, type: 'reply' },
    ]);
    const events = await g.outbox('guilds.message.created');
    expect(events.find((e) => e.data.id === first.id)?.data).toMatchObject({ type: 'default', nonce: 'client-42' });
    expect(events.find((e) => e.data.id === reply.id)?.data).toMatchObject({ type: 'reply' });
    const listed = (await g.call(alice, 'GET', `${messages(general)}?around=${first.id}&limit=1`)).body;
    expect(listed).toEqual([expect.objectContaining({ id: first.id, type: 'default' })]);
    expect(listed[0]).not.toHaveProperty('nonce');
  });

  it('answers 400 to a nonce longer than 25 characters or not a string, and stores nothing', async () => {
    const before = await rowCount(general);
    for (const nonce of ['x'.repeat(26), 42]) {
      const res = await post(alice, general, { content: 'hi', nonce });
      expect(res.status).toBe(400);
      expect(res.body.error).toMatch(/nonce/);
    }
    expect(await rowCount(general)).toBe(before);
  });

  it('answers 400 for empty, blank, too long or malformed bodies and stores nothing', async () => {
    const before = await rowCount(general);
    for (const payload of [
      {},
      { content: '' },
      { content: '   ' },
      { content: 'x'.repeat(4001) },
      { content: 5 },
      { content: 'x', replyToId: 'nope' },
    ]) {
      const res = await post(alice, general, payload);
      expect(res.status, JSON.stringify(payload)).toBe(400);
      expect(res.body.error).toEqual(expect.any(String));
    }
    expect((await post(alice, general, { content: 'x'.repeat(4000) })).status).toBe(201);
    expect(await rowCount(general)).toBe(before + 1);
  });

  it('parses user, role and @everyone mentions, keeping what exists and may notify', async () => {
    const loud = (await g.call(owner, 'POST', `/v1/servers/${server.id}/roles`, { name: 'loud', mentionable: true })).body.id;
    const quiet = modRole;
    const content = `<@${bob}> <@!${alice}> <@${stranger}> <@&${loud}> <@&${quiet}> <@&${newId()}> @everyone`;
    const res = await post(alice, general, { content });
    expect(res.status).toBe(201);
    expect(res.body.mentions.users.sort()).toEqual([alice, bob].sort());
    // Alice has MENTION_EVERYONE (a default of @everyone): every role of the server notifies.
    expect(res.body.mentions.roles.sort()).toEqual([loud, quiet].sort());
    expect(res.body.mentions.everyone).toBe(true);

    const muted = await newChannel('muted');
    await override(muted, { userId: alice }, 0n, Permission.MENTION_EVERYONE);
    const denied = await post(alice, muted, { content });
    expect(denied.status).toBe(201);
    expect(denied.body.mentions).toEqual({ users: [alice, bob].sort(), roles: [loud], everyone: false });
    expect(denied.body.content).toBe(content);
  });
});

describe('permissions', () => {
  it('hides every messages route of a channel the caller cannot see (404), and of a server they are not in', async () => {
    const msg = (await post(owner, secret, { content: 'classified' })).body;
    const routes: [string, string, unknown?][] = [
      ['POST', messages(secret), { content: 'hi' }],
      ['GET', messages(secret)],
      ['PATCH', `${messages(secret)}/${msg.id}`, { content: 'x' }],
      ['DELETE', `${messages(secret)}/${msg.id}`],
      ['GET', `/v1/channels/${secret}/pins`],
      ['PUT', `/v1/channels/${secret}/pins/${msg.id}`],
      ['DELETE', `/v1/channels/${secret}/pins/${msg.id}`],
      ['PUT', `${messages(secret)}/${msg.id}/reactions/${encodeURIComponent('👍')}/@me`],
      ['DELETE', `${messages(secret)}/${msg.id}/reactions/${encodeURIComponent('👍')}/@me`],
      ['GET', `${messages(secret)}/${msg.id}/reactions/${encodeURIComponent('👍')}`],
    ];
    for (const [method, url, payload] of routes) {
      for (const who of [alice, stranger]) {
        const res = await g.call(who, method, url, payload);
        expect(res.status, `${who === alice ? 'member' : 'stranger'} ${method} ${url}`).toBe(404);
        expect(res.body.error).toMatch(/not found/);
      }
    }
    for (const [method, url, payload] of routes.slice(0, 2)) expect((await g.call(null, method, url, payload)).status).toBe(401);
    expect((await g.db.query('SELECT content, pinned_at FROM messages WHERE id = $1', [msg.id])).rows).toEqual([
      { content: 'classified', pinned_at: null },
    ]);
    expect(
      (await g.db.query('SELECT count(*)::int AS n FROM messages WHERE channel_id = $1 AND author_id <> $2', [secret, owner])).rows[0].n,
    ).toBe(0);
    expect((await g.db.query('SELECT count(*)::int AS n FROM message_reactions WHERE message_id = $1', [msg.id])).rows[0].n).toBe(0);
  });

  it('answers 403 to a member denied SEND_MESSAGES by an override, who can still read', async () => {
    const channel = await newChannel('read-only');
    await override(channel, { userId: bob }, 0n, Permission.SEND_MESSAGES);
    const res = await post(bob, channel, { content: 'let me in' });
    expect(res.status).toBe(403);
    expect(res.body.error).toMatch(/SEND_MESSAGES/);
    expect((await g.call(bob, 'GET', messages(channel))).status).toBe(200);
    expect(await rowCount(channel)).toBe(0);
    // A role's allow beats @everyone's deny, as the permission module says.
    const gated = await newChannel('gated');
    await override(gated, { roleId: server.id }, 0n, Permission.SEND_MESSAGES);
    await override(gated, { roleId: modRole }, Permission.SEND_MESSAGES, 0n);
    expect((await post(alice, gated, { content: 'x' })).status).toBe(403);
    expect((await post(mod, gated, { content: 'x' })).status).toBe(201);
  });

  it('needs READ_MESSAGE_HISTORY to read history, pins and reactions', async () => {
    const channel = await newChannel('write-only');
    const msg = (await post(owner, channel, { content: 'x' })).body;
    await override(channel, { userId: bob }, 0n, Permission.READ_MESSAGE_HISTORY);
    for (const [method, url] of [
      ['GET', messages(channel)],
      ['GET', `/v1/channels/${channel}/pins`],
      ['PUT', `${messages(channel)}/${msg.id}/reactions/${encodeURIComponent('👍')}/@me`],
      ['GET', `${messages(channel)}/${msg.id}/reactions/${encodeURIComponent('👍')}`],
    ]) {
      const res = await g.call(bob, method!, url!);
      expect(res.status, `${method} ${url}`).toBe(403);
      expect(res.body.error).toMatch(/READ_MESSAGE_HISTORY/);
    }
    expect((await post(bob, channel, { content: 'still allowed to post' })).status).toBe(201);
  });

  it('answers 403 to a reply from a member without READ_MESSAGE_HISTORY, to a real message or a made-up one alike', async () => {
    const channel = await newChannel('reply-unread');
    const original = (await post(owner, channel, { content: 'the original' })).body;
    expect((await post(bob, channel, { content: 'my access is known now' })).status).toBe(201);
    await override(channel, { userId: bob }, 0n, Permission.READ_MESSAGE_HISTORY);
    // Refused before the target is looked up: the answers tell nothing of which ids exist.
    for (const replyToId of [original.id, newId()]) {
      const res = await post(bob, channel, { content: 're', replyToId });
      expect({ status: res.status, body: res.body }).toEqual({ status: 403, body: { error: 'Missing permission READ_MESSAGE_HISTORY' } });
    }
    expect(await rowCount(channel)).toBe(2);
    expect((await post(bob, channel, { content: 'no reply is fine' })).status).toBe(201);
  });

  it('refuses messages in a voice channel', async () => {
    const res = await post(owner, voice, { content: 'hi' });
    expect(res.status).toBe(400);
    expect(await rowCount(voice)).toBe(0);
  });
});

describe('attachments', () => {
  it('stores the media service’s record of each file, never the client’s url, type or size', async () => {
    const file = media.upload(alice, 'cat.png', 'image/png', 2048);
    const res = await post(alice, general, {
      attachments: { a: { url: `/v1/media/${file.id}/cat.png`, filename: 'cat.html', contentType: 'text/html', size: 1 } },
    });
    expect(res.status).toBe(201);
    expect(res.body.content).toBe('');
    expect(res.body.attachments).toEqual({ a: { url: file.url, filename: 'cat.png', contentType: 'image/png', size: 2048 } });
    const row = (await g.db.query('SELECT attachments FROM messages WHERE id = $1', [res.body.id])).rows[0];
    expect(row.attachments).toEqual(res.body.attachments);
  });

  it('answers 400 for someone else’s, unknown or foreign files and 403 without ATTACH_FILES', async () => {
    const bobs = media.upload(bob);
    const mine = media.upload(alice);
    const before = await rowCount(general);
    for (const url of [bobs.url, `/v1/media/${newId()}/x.png`, 'https://evil.example/x.png']) {
      const res = await post(alice, general, {
        content: 'look',
        attachments: { a: { url, filename: 'x.png', contentType: 'image/png', size: 1 } },
      });
      expect(res.status, url).toBe(400);
      expect(res.body.error).toMatch(/attachments\.a/);
    }
    const channel = await newChannel('no-files');
    await override(channel, { userId: alice }, 0n, Permission.ATTACH_FILES);
    const res = await post(alice, channel, {
      content: 'look',
      attachments: { a: { url: mine.url, filename: 'x', contentType: 'x', size: 1 } },
    });
    expect(res.status).toBe(403);
    expect(res.body.error).toMatch(/ATTACH_FILES/);
    expect(await rowCount(general)).toBe(before);
    expect(await rowCount(channel)).toBe(0);
  });
});

describe('paging', () => {
  it('pages newest first with before, after and around, and validates the query', async () => {
    const channel = await newChannel('history');
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) ids.push((await post(alice, channel, { content: `m${i}` })).body.id);
    const newestFirst = [...ids].reverse();
    const page = async (query: string) => {
      const res = await g.call(alice, 'GET', `${messages(channel)}?${query}`);
      expect(res.status, query).toBe(200);
      return (res.body as { id: string }[]).map((m) => m.id);
    };
    expect(await page('')).toEqual(newestFirst);
    expect(await page('limit=5')).toEqual(newestFirst.slice(0, 5));
    expect(await page(`before=${ids[5]}&limit=3`)).toEqual([ids[4], ids[3], ids[2]]);
    expect(await page(`after=${ids[5]}&limit=3`)).toEqual([ids[8], ids[7], ids[6]]);
    expect(await page(`around=${ids[5]}&limit=5`)).toEqual([ids[7], ids[6], ids[5], ids[4], ids[3]]);
    expect(await page(`around=${ids[11]}&limit=4`)).toEqual([ids[11], ids[10], ids[9], ids[8]]);
    for (const query of ['limit=0', 'limit=101', `before=${ids[1]}&after=${ids[0]}`, 'around=nope']) {
      const res = await g.call(alice, 'GET', `${messages(channel)}?${query}`);
      expect(res.status, query).toBe(400);
    }
  });

  it('never skips nor repeats a message while others arrive, backwards or forwards', async () => {
    const channel = await newChannel('busy');
    const history: string[] = [];
    for (let i = 0; i < 20; i++) history.push((await post(alice, channel, { content: `old ${i}` })).body.id);
    const writers = [alice, bob, mod, owner];
    const arriving = Promise.all(
      Array.from(
        { length: 40 },
        async (_, i) => (await post(writers[i % writers.length]!, channel, { content: `new ${i}` })).body.id as string,
      ),
    );

    // Backwards from the newest message seen at the start: exactly the history, once each.
    const seenBack: string[] = [];
    let cursor = history.at(-1)!;
    seenBack.push(cursor);
    for (;;) {
      const page = (await g.call(bob, 'GET', `${messages(channel)}?before=${cursor}&limit=3`)).body as { id: string }[];
      if (page.length === 0) break;
      seenBack.push(...page.map((m) => m.id));
      cursor = page.at(-1)!.id;
    }
    expect(seenBack).toEqual([...history].reverse());

    // Forwards while the posts land: every message exactly once, in order.
    const seenForward: string[] = [];
    let after = history.at(-1)!;
    const catchUp = async () => {
      for (;;) {
        const page = (await g.call(bob, 'GET', `${messages(channel)}?after=${after}&limit=4`)).body as { id: string }[];
        if (page.length === 0) return;
        const oldestFirst = page.map((m) => m.id).reverse();
        seenForward.push(...oldestFirst);
        after = oldestFirst.at(-1)!;
      }
    };
    let done = false;
    const posted = arriving.then((ids) => {
      done = true;
      return ids;
    });
    while (!done) await catchUp();
    const newIds = await posted;
    await catchUp();
    expect(new Set(seenForward).size).toBe(seenForward.length);
    expect(seenForward).toEqual([...newIds].sort());
    expect([...seenForward].sort()).toEqual(seenForward);
  });
});

describe('paging against a post in flight', () => {
  it('makes a reader wait for a post that has its id but has not committed, so no cursor passes over it', async () => {
    const channel = await newChannel('in-flight');
    const first = (await post(alice, channel, { content: 'first' })).body.id;
    const slow = await g.db.connect();
    try {
      await slow.query('BEGIN');
      const message = {
        channelId: channel,
        serverId: server.id,
        authorId: bob,
        content: 'late',
        attachments: {},
        replyToId: null,
        mentions: NO_MENTIONS,
      };
      const late = await postMessage(slow, { requestId: 'in-flight' }, message);
      // A post that starts later commits first, with a greater id.
      const quick = (await post(alice, channel, { content: 'quick' })).body.id;
      expect(late.id < quick).toBe(true);
      let answered = false;
      const reading = g.call(bob, 'GET', `${messages(channel)}?after=${first}`).then((res) => {
        answered = true;
        return res;
      });
      await new Promise((r) => setTimeout(r, 300));
      expect(answered).toBe(false);
      await slow.query('COMMIT');
      const page = await reading;
      expect(page.body.map((m: { id: string }) => m.id)).toEqual([quick, late.id]);
    } finally {
      slow.release();
    }
  });
});

describe('slowmode', () => {
  it('answers 429 with Retry-After to a second message within the window; moderators bypass it', async () => {
    const channel = await newChannel('slow');
    expect((await g.call(owner, 'PATCH', `/v1/channels/${channel}`, { slowmodeSeconds: 30 })).status).toBe(200);
    expect((await post(alice, channel, { content: 'one' })).status).toBe(201);
    const second = await post(alice, channel, { content: 'two' });
    expect(second.status).toBe(429);
    expect(second.body.error).toMatch(/[Ss]lowmode/);
    const retryAfter = Number(second.headers['retry-after']);
    expect(retryAfter).toBeGreaterThanOrEqual(29);
    expect(retryAfter).toBeLessThanOrEqual(30);
    // Another member has a window of their own.
    expect((await post(bob, channel, { content: 'bob' })).status).toBe(201);
    // MANAGE_MESSAGES (mod) and the owner (MANAGE_CHANNELS) post freely.
    for (const who of [mod, mod, owner, owner]) expect((await post(who, channel, { content: 'free' })).status).toBe(201);
    expect((await g.db.query('SELECT content FROM messages WHERE channel_id = $1 AND author_id = $2', [channel, alice])).rows).toEqual([
      { content: 'one' },
    ]);
  });

  it('lets exactly one of concurrent posts through, and a rejected post keeps the member’s window', async () => {
    const channel = await newChannel('slow-race');
    expect((await g.call(owner, 'PATCH', `/v1/channels/${channel}`, { slowmodeSeconds: 60 })).status).toBe(200);
    const answers = await Promise.all(Array.from({ length: 6 }, () => post(bob, channel, { content: 'race' })));
    expect(answers.map((a) => a.status).sort()).toEqual([201, 429, 429, 429, 429, 429]);
    expect(await rowCount(channel)).toBe(1);
    // The window is in the database: shortening it is enough to post again, on any replica.
    await g.db.query(`UPDATE slowmode_marks SET sent_at = now() - interval '61 seconds' WHERE channel_id = $1`, [channel]);
    expect((await post(bob, channel, { content: 'later' })).status).toBe(201);
  });
});

describe('editing and deleting', () => {
  it('lets only the author edit, sets editedAt and re-parses mentions', async () => {
    const msg = (await post(alice, general, { content: 'draft' })).body;
    for (const who of [bob, owner, mod]) {
      const res = await g.call(who, 'PATCH', `${messages(general)}/${msg.id}`, { content: 'hijack' });
      expect(res.status).toBe(403);
    }
    expect((await g.call(alice, 'PATCH', `${messages(general)}/${newId()}`, { content: 'x' })).status).toBe(404);
    expect((await g.call(alice, 'PATCH', `${messages(general)}/${msg.id}`, { content: '' })).status).toBe(400);
    const res = await g.call(alice, 'PATCH', `${messages(general)}/${msg.id}`, { content: `final <@${bob}>` });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: msg.id, content: `final <@${bob}>`, mentions: { users: [bob] }, createdAt: msg.createdAt });
    expect(res.body.editedAt).toEqual(expect.any(String));
    expect((await g.db.query('SELECT content, edited_at IS NOT NULL AS edited FROM messages WHERE id = $1', [msg.id])).rows[0]).toEqual({
      content: `final <@${bob}>`,
      edited: true,
    });
    expect((await g.outbox('guilds.message.updated')).map((e) => e.data.id)).toContain(msg.id);
  });

  it('lets the author or MANAGE_MESSAGES delete; others get 403', async () => {
    const mine = (await post(alice, general, { content: 'mine' })).body;
    const other = (await post(alice, general, { content: 'moderated' })).body;
    expect((await g.call(bob, 'DELETE', `${messages(general)}/${mine.id}`)).status).toBe(403);
    expect((await g.call(alice, 'DELETE', `${messages(general)}/${mine.id}`)).status).toBe(204);
    expect((await g.call(mod, 'DELETE', `${messages(general)}/${other.id}`)).status).toBe(204);
    expect((await g.call(alice, 'DELETE', `${messages(general)}/${mine.id}`)).status).toBe(404);
    expect((await g.db.query('SELECT id FROM messages WHERE id = ANY($1::uuid[])', [[mine.id, other.id]])).rows).toEqual([]);
    const deleted = (await g.outbox('guilds.message.deleted')).map((e) => e.data);
    expect(deleted).toEqual(expect.arrayContaining([{ id: mine.id, channelId: general, serverId: server.id }]));
  });
});

describe('pins', () => {
  it('pins with MANAGE_MESSAGES, lists newest pin first, and keeps to 50 per channel', async () => {
    const channel = await newChannel('pins');
    const ids: string[] = [];
    for (let i = 0; i < 51; i++) ids.push((await post(owner, channel, { content: `p${i}` })).body.id);
    const pin = (id: string, who = mod) => g.call(who, 'PUT', `/v1/channels/${channel}/pins/${id}`);

    expect((await pin(ids[0]!, alice)).status).toBe(403);
    expect((await pin(newId())).status).toBe(404);
    for (const id of ids.slice(0, 50)) expect((await pin(id)).status).toBe(204);
    const over = await pin(ids[50]!);
    expect(over.status).toBe(400);
    expect(over.body.error).toMatch(/50/);
    expect(
      (await g.db.query('SELECT count(*)::int AS n FROM messages WHERE channel_id = $1 AND pinned_at IS NOT NULL', [channel])).rows[0].n,
    ).toBe(50);

    // Pinning again is a no-op: no second event.
    const events = (await g.outbox('guilds.pin.added')).length;
    expect((await pin(ids[3]!)).status).toBe(204);
    expect((await g.outbox('guilds.pin.added')).length).toBe(events);

    await g.db.query(
      `UPDATE messages SET pinned_at = now() - (id::text < $2::text)::int * interval '1 hour' WHERE channel_id = $1 AND pinned_at IS NOT NULL`,
      [channel, ids[1]],
    );
    const list = await g.call(alice, 'GET', `/v1/channels/${channel}/pins`);
    expect(list.status).toBe(200);
    expect(list.body).toHaveLength(50);
    expect(list.body.every((m: { pinned: boolean }) => m.pinned)).toBe(true);
    expect(list.body.at(-1).id).toBe(ids[0]);

    expect((await g.call(alice, 'DELETE', `/v1/channels/${channel}/pins/${ids[0]}`)).status).toBe(403);
    expect((await g.call(mod, 'DELETE', `/v1/channels/${channel}/pins/${ids[0]}`)).status).toBe(204);
    expect((await pin(ids[50]!)).status).toBe(204);
    expect((await g.outbox('guilds.pin.removed')).map((e) => e.data)).toContainEqual({
      messageId: ids[0],
      channelId: channel,
      serverId: server.id,
      by: mod,
    });
  });
});

describe('reactions', () => {
  const thumbs = encodeURIComponent('👍');
  const party = encodeURIComponent('🎉');
  const react = (who: string, channelId: string, messageId: string, emoji: string, method = 'PUT') =>
    g.call(who, method, `${messages(channelId)}/${messageId}/reactions/${emoji}/@me`);

  it('adds once, shows {count, me} per viewer, lists users and takes back', async () => {
    const msg = (await post(owner, general, { content: 'react to me' })).body;
    const before = (await g.outbox('guilds.reaction.added')).length;
    expect((await react(alice, general, msg.id, thumbs)).status).toBe(204);
    expect((await react(alice, general, msg.id, thumbs)).status).toBe(204);
    expect((await react(bob, general, msg.id, thumbs)).status).toBe(204);
    expect((await react(bob, general, msg.id, 'party_parrot:123456789012345678')).status).toBe(204);
    expect((await g.outbox('guilds.reaction.added')).length).toBe(before + 3);

    const seen = async (who: string) =>
      ((await g.call(who, 'GET', `${messages(general)}?around=${msg.id}&limit=1`)).body as { id: string; reactions: unknown }[])[0]!
        .reactions;
    expect(await seen(alice)).toEqual({ '👍': { count: 2, me: true }, 'party_parrot:123456789012345678': { count: 1, me: false } });
    expect(await seen(owner)).toEqual({ '👍': { count: 2, me: false }, 'party_parrot:123456789012345678': { count: 1, me: false } });

    const users = await g.call(owner, 'GET', `${messages(general)}/${msg.id}/reactions/${thumbs}`);
    expect(users.status).toBe(200);
    expect(users.body.map((u: { id: string }) => u.id)).toEqual([alice, bob].sort());
    expect(users.body[0]).toEqual({
      id: expect.any(String),
      username: expect.any(String),
      displayName: expect.any(String),
      avatarUrl: null,
    });

    expect((await react(alice, general, msg.id, thumbs, 'DELETE')).status).toBe(204);
    expect((await react(alice, general, msg.id, thumbs, 'DELETE')).status).toBe(204);
    expect((await g.outbox('guilds.reaction.removed')).filter((e) => e.data.messageId === msg.id)).toHaveLength(1);
    expect(await seen(alice)).toEqual({ '👍': { count: 1, me: false }, 'party_parrot:123456789012345678': { count: 1, me: false } });
  });

  it('takes at most 20 distinct emoji per message: a new 21st is a 400 and changes nothing', async () => {
    const msg = (await post(owner, general, { content: 'so many feelings' })).body;
    const custom = (i: number) => `emoji_${i}:${1000 + i}`;
    for (let i = 0; i < 19; i++) expect((await react(alice, general, msg.id, custom(i))).status).toBe(204);
    // Two new emoji at once at 19: exactly one becomes the 20th.
    const racing = await Promise.all([react(bob, general, msg.id, custom(19)), react(owner, general, msg.id, custom(20))]);
    expect(racing.map((r) => r.status).sort()).toEqual([204, 400]);
    const events = (await g.outbox('guilds.reaction.added')).length;
    const full = await react(alice, general, msg.id, custom(21));
    expect(full.status).toBe(400);
    expect(full.body).toEqual({ error: 'Maximum number of reactions reached (20)' });
    expect((await g.outbox('guilds.reaction.added')).length).toBe(events);
    // An emoji already there still takes more people.
    expect((await react(mod, general, msg.id, custom(0))).status).toBe(204);
    const distinct = await g.db.query(
      'SELECT count(DISTINCT emoji)::int AS n, count(*)::int AS total FROM message_reactions WHERE message_id = $1',
      [msg.id],
    );
    expect(distinct.rows[0]).toEqual({ n: 20, total: 21 });
  });

  it('needs ADD_REACTIONS only for an emoji not yet on the message', async () => {
    const channel = await newChannel('no-new-reactions');
    await override(channel, { userId: bob }, 0n, Permission.ADD_REACTIONS);
    const msg = (await post(owner, channel, { content: 'x' })).body;
    const denied = await react(bob, channel, msg.id, party);
    expect(denied.status).toBe(403);
    expect(denied.body.error).toMatch(/ADD_REACTIONS/);
    expect((await react(alice, channel, msg.id, party)).status).toBe(204);
    expect((await react(bob, channel, msg.id, party)).status).toBe(204);
    expect(
      (await g.db.query('SELECT user_id FROM message_reactions WHERE message_id = $1 ORDER BY user_id', [msg.id])).rows.map(
        (r) => r.user_id,
      ),
    ).toEqual([alice, bob].sort());
  });

  it('answers 400 for what is not an emoji and 404 for a message of another channel', async () => {
    const msg = (await post(owner, general, { content: 'x' })).body;
    for (const emoji of ['abc', encodeURIComponent('👍👍'), 'a:1', encodeURIComponent('<script>')]) {
      expect((await react(alice, general, msg.id, emoji)).status, emoji).toBe(400);
    }
    const elsewhere = await newChannel('elsewhere');
    expect((await react(alice, elsewhere, msg.id, thumbs)).status).toBe(404);
    expect((await g.db.query('SELECT count(*)::int AS n FROM message_reactions WHERE message_id = $1', [msg.id])).rows[0].n).toBe(0);
  });
});

describe('attachments when media is down', () => {
  it('answers 503 and stores nothing', async () => {
    const file = media.upload(alice);
    await media.stop();
    const before = await rowCount(general);
    const res = await post(alice, general, {
      content: 'x',
      attachments: { a: { url: file.url, filename: 'x', contentType: 'x', size: 1 } },
    });
    expect(res.status).toBe(503);
    expect(res.body).toEqual({ error: 'Service unavailable' });
    expect(await rowCount(general)).toBe(before);
  });
});
