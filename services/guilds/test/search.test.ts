import { randomBytes } from 'node:crypto';
import { Permission, toMask } from '@chat/contracts';
import { countRoundTrips, startMediaStandIn } from '@chat/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { searchMessages } from '../src/db/messages.ts';
import { newId, startGuilds } from './harness.ts';

/** GET /v1/servers/{id}/messages/search: full-text search drawn only from what the caller may read. */

const g = await startGuilds();
const media = await startMediaStandIn(g.runtime);
afterAll(async () => {
  await media.stop();
  await g.close();
});

type Message = { id: string; channelId: string; authorId: string; content: string };
type Found = { status: number; body: { total: number; messages: Message[]; error?: string } };

let owner: string;
let alice: string;
let bob: string;
let server: { id: string };
let general: string;
let secret: string;
let noHistory: string;
let hidden: string;

/** A word no other test uses, so each test counts only its own messages. */
const word = () => `w${randomBytes(5).toString('hex')}`;
const post = async (userId: string, channelId: string, body: string | Record<string, unknown>): Promise<Message> => {
  const res = await g.call(userId, 'POST', `/v1/channels/${channelId}/messages`, typeof body === 'string' ? { content: body } : body);
  expect(res.status).toBe(201);
  return res.body;
};
const search = (userId: string | null, query: Record<string, string | number>, serverId = server.id): Promise<Found> => {
  const qs = new URLSearchParams(Object.entries(query).map(([k, v]): [string, string] => [k, String(v)]));
  return g.call(userId, 'GET', `/v1/servers/${serverId}/messages/search?${qs}`);
};
const ids = (found: Found) => found.body.messages.map((m) => m.id);
const newChannel = async (name: string) =>
  (await g.call(owner, 'POST', `/v1/servers/${server.id}/channels`, { name, channelType: 'text' })).body.id as string;
const override = async (channelId: string, target: { userId?: string; roleId?: string }, deny: bigint) => {
  const res = await g.call(owner, 'PUT', `/v1/channels/${channelId}/permissions`, {
    ...target,
    allowBits: toMask(0n),
    denyBits: toMask(deny),
  });
  expect(res.status).toBe(200);
};

beforeAll(async () => {
  [owner, alice, bob] = await Promise.all([g.knownUser('owner'), g.knownUser('alice'), g.knownUser('bob')]);
  server = (await g.call(owner, 'POST', '/v1/servers', { name: 'Search', isPublic: true })).body;
  for (const user of [alice, bob]) expect((await g.call(user, 'POST', `/v1/servers/${server.id}/join`)).status).toBe(200);
  // Private from now on: a stranger gets the 404 of any private server.
  expect((await g.call(owner, 'PATCH', `/v1/servers/${server.id}`, { isPublic: false })).status).toBe(200);
  const channels = (await g.call(owner, 'GET', `/v1/servers/${server.id}/channels`)).body as { id: string; channelType: string }[];
  general = channels.find((c) => c.channelType === 'text')!.id;
  secret = await newChannel('secret');
  await override(secret, { roleId: server.id }, Permission.VIEW_CHANNEL);
  noHistory = await newChannel('no-history');
  await override(noHistory, { userId: alice }, Permission.READ_MESSAGE_HISTORY);
  hidden = await newChannel('hidden');
  expect((await g.call(owner, 'PATCH', `/v1/channels/${hidden}`, { isHidden: true })).status).toBe(200);
});

describe('what the caller may read', () => {
  it('never answers nor counts hits in channels denied by an override, without history, or hidden; the owner finds all', async () => {
    const w = word();
    const visible = [await post(alice, general, `${w} one`), await post(bob, general, `${w} two`)];
    // Newer than the visible hits: a filter applied after the LIMIT would leave alice's first page empty.
    for (const channel of [secret, noHistory, hidden, secret, noHistory, hidden]) await post(owner, channel, `${w} staff only`);

    const asAlice = await search(alice, { q: w, limit: 2 });
    expect(asAlice.status).toBe(200);
    expect(asAlice.body.total).toBe(2);
    expect(ids(asAlice)).toEqual(visible.map((m) => m.id).reverse());

    // READ_MESSAGE_HISTORY is denied to alice alone: bob reads that channel, not the secret or hidden ones.
    const asBob = await search(bob, { q: w });
    expect(asBob.body.total).toBe(4);
    expect(new Set(asBob.body.messages.map((m) => m.channelId))).toEqual(new Set([general, noHistory]));

    const asOwner = await search(owner, { q: w, limit: 100 });
    expect(asOwner.body.total).toBe(8);
    expect(new Set(asOwner.body.messages.map((m) => m.channelId))).toEqual(new Set([general, secret, noHistory, hidden]));
  });

  it('answers nothing for a channel the caller cannot read, even when named', async () => {
    const w = word();
    await post(owner, secret, w);
    await post(owner, noHistory, w);
    for (const channelId of [secret, noHistory, hidden]) {
      const res = await search(alice, { q: w, channelId });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ total: 0, messages: [] });
    }
    expect((await search(owner, { q: w, channelId: secret })).body.total).toBe(1);
  });

  it('follows a permission change at once: lifting the override lets the hits in', async () => {
    const w = word();
    const channel = await newChannel('later');
    await override(channel, { userId: bob }, Permission.VIEW_CHANNEL);
    const message = await post(owner, channel, w);
    expect((await search(bob, { q: w })).body.total).toBe(0);
    await override(channel, { userId: bob }, 0n);
    const after = await search(bob, { q: w });
    expect(after.body.total).toBe(1);
    expect(ids(after)).toEqual([message.id]);
  });

  it('reads no channel or override rows once the server’s channel list is kept', async () => {
    const w = word();
    await post(alice, general, w);
    expect((await search(alice, { q: w })).body.total).toBe(1);
    const { result, statements } = await countRoundTrips(() => search(alice, { q: w }));
    expect(result.body.total).toBe(1);
    expect(statements.filter((sql) => /\b(channels|channel_overrides)\b/.test(sql))).toEqual([]);
    // Membership, the search with its page of messages, their reactions.
    expect(statements).toHaveLength(3);
  });

  it('answers 404 to a stranger and 401 without a token, as every route of a private server', async () => {
    const stranger = await g.knownUser('stranger');
    const res = await search(stranger, { q: 'anything' });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: expect.any(String) });
    expect((await search(alice, { q: 'anything' }, newId())).status).toBe(404);
    expect((await search(null, { q: 'anything' })).status).toBe(401);
  });
});

describe('the channels a search names', () => {
  /** A server where carol may read four text channels and not the fifth. */
  async function wideServer() {
    const carol = await g.knownUser(`carol${randomBytes(3).toString('hex')}`);
    const wide = (await g.call(owner, 'POST', '/v1/servers', { name: 'Wide', isPublic: true })).body as { id: string };
    expect((await g.call(carol, 'POST', `/v1/servers/${wide.id}/join`)).status).toBe(200);
    const create = async (name: string) =>
      (await g.call(owner, 'POST', `/v1/servers/${wide.id}/channels`, { name, channelType: 'text' })).body.id as string;
    const channels = (await g.call(owner, 'GET', `/v1/servers/${wide.id}/channels`)).body as { id: string; channelType: string }[];
    const open = [channels.find((c) => c.channelType === 'text')!.id, await create('a'), await create('b'), await create('c')];
    const closed = await create('staff');
    const res = await g.call(owner, 'PUT', `/v1/channels/${closed}/permissions`, {
      roleId: wide.id,
      allowBits: toMask(0n),
      denyBits: toMask(Permission.VIEW_CHANNEL),
    });
    expect(res.status).toBe(200);
    return { carol, wide, open, closed, overrideId: res.body.id as string };
  }
  const listVersion = async (serverId: string) =>
    Number((await g.db.query('SELECT version FROM channel_list_versions WHERE server_id = $1', [serverId])).rows[0].version);

  it('names the channels a member may not read when they are fewer, and still never finds them', async () => {
    const { carol, wide, open, closed, overrideId } = await wideServer();
    const w = word();
    for (const channel of [...open, closed, closed]) await post(owner, channel, w);
    const { result, statements } = await countRoundTrips(() => search(carol, { q: w }, wide.id));
    expect(result.body.total).toBe(4);
    expect(new Set(result.body.messages.map((m) => m.channelId))).toEqual(new Set(open));
    expect(statements.filter((sql) => sql.includes('<> ALL'))).toHaveLength(1);
    // Lifting the override shows its hits at once: the list's version moved with it.
    expect((await g.call(owner, 'DELETE', `/v1/channels/${closed}/permissions/${overrideId}`)).status).toBe(204);
    expect((await search(carol, { q: w }, wide.id)).body.total).toBe(6);
  });

  it('answers stale for channels drawn from an older list, so a channel created since is never read unchecked', async () => {
    const { wide, open } = await wideServer();
    const drawnAt = await listVersion(wide.id);
    const late = (await g.call(owner, 'POST', `/v1/servers/${wide.id}/channels`, { name: 'late', channelType: 'text' })).body.id;
    const w = word();
    await post(owner, late, w);
    await post(owner, open[0]!, w);
    const page = { limit: 25 };
    expect(await searchMessages(g.db, { except: [], serverId: wide.id, listVersion: drawnAt }, { text: w, page })).toBe('stale');
    const current = await searchMessages(
      g.db,
      { except: [late], serverId: wide.id, listVersion: await listVersion(wide.id) },
      { text: w, page },
    );
    expect(current).toMatchObject({ total: 1, messages: [{ channelId: open[0] }] });
  });
});

describe('the query', () => {
  it('answers the same Message records as the channel history', async () => {
    const w = word();
    const message = await post(alice, general, `${w} as in the history`);
    await g.call(bob, 'PUT', `/v1/channels/${general}/messages/${message.id}/reactions/${encodeURIComponent('👍')}/@me`);
    const history = (await g.call(alice, 'GET', `/v1/channels/${general}/messages?limit=5`)).body as Message[];
    const found = await search(alice, { q: w });
    expect(found.body).toEqual({ total: 1, messages: [history.find((m) => m.id === message.id)] });
  });

  it('takes phrases in quotes, -excluded words and or', async () => {
    const w = word();
    const [quickBrown, brownQuick, quickRed] = [
      await post(alice, general, `${w} the quick brown fox`),
      await post(alice, general, `${w} brown and quick fox`),
      await post(alice, general, `${w} a quick red fox`),
    ];
    const found = async (q: string) => ids(await search(alice, { q: `${w} ${q}` }));
    expect(await found('"quick brown"')).toEqual([quickBrown.id]);
    expect(await found('fox -red')).toEqual([brownQuick.id, quickBrown.id]);
    expect(await found('red or "brown fox"')).toEqual([quickRed.id, quickBrown.id]);
    expect(await found('quick fox')).toEqual([quickRed.id, brownQuick.id, quickBrown.id]);
  });

  it('ignores case and accents, and finds words of any alphabet', async () => {
    const w = word();
    const cafe = await post(alice, general, `${w} Rendez-vous au Café Zoë`);
    const plain = await post(alice, general, `${w} meet at the cafe`);
    const russian = await post(alice, general, `${w} Привет, Ёжик!`);
    const polish = await post(alice, general, `${w} Łódź i Kraków`);
    expect(ids(await search(alice, { q: `${w} cafe` }))).toEqual([plain.id, cafe.id]);
    expect(ids(await search(alice, { q: `${w} CAFÉ` }))).toEqual([plain.id, cafe.id]);
    expect(ids(await search(alice, { q: `${w} zoe` }))).toEqual([cafe.id]);
    expect(ids(await search(alice, { q: `${w} привет ежик` }))).toEqual([russian.id]);
    expect(ids(await search(alice, { q: `${w} lodz krakow` }))).toEqual([polish.id]);
  });

  it('narrows by author, channel, attachment and link', async () => {
    const w = word();
    const other = await newChannel('other');
    const byAlice = await post(alice, general, `${w} see https://example.com/page`);
    const byBob = await post(bob, general, `${w} no link here, just example.com`);
    const file = media.upload(bob);
    const withFile = await post(bob, other, {
      content: w,
      attachments: { a: { url: file.url, filename: 'x', contentType: 'x', size: 1 } },
    });
    expect(ids(await search(alice, { q: w, authorId: alice }))).toEqual([byAlice.id]);
    expect(ids(await search(alice, { q: w, authorId: bob }))).toEqual([withFile.id, byBob.id]);
    expect(ids(await search(alice, { q: w, channelId: general }))).toEqual([byBob.id, byAlice.id]);
    expect(ids(await search(alice, { q: w, has: 'link' }))).toEqual([byAlice.id]);
    expect(ids(await search(alice, { q: w, has: 'attachment' }))).toEqual([withFile.id]);
    const combined = await search(alice, { q: w, authorId: bob, channelId: general, has: 'attachment' });
    expect(combined.body).toEqual({ total: 0, messages: [] });
  });

  it('pages newest first by before and after without gaps or repeats; total counts every hit', async () => {
    const w = word();
    const posted: Message[] = [];
    for (let i = 0; i < 7; i++) posted.push(await post(i % 2 ? bob : alice, general, `${w} number ${i}`));
    await post(alice, general, 'not a hit');
    const newestFirst = posted.map((m) => m.id).reverse();

    const back: string[] = [];
    let page = await search(alice, { q: w, limit: 3 });
    while (page.body.messages.length > 0) {
      expect(page.body.total).toBe(7);
      back.push(...ids(page));
      page = await search(alice, { q: w, limit: 3, before: back.at(-1)! });
    }
    expect(back).toEqual(newestFirst);

    const forward: string[][] = [];
    let cursor = posted[0]!.id;
    for (;;) {
      const res = await search(alice, { q: w, limit: 4, after: cursor });
      if (res.body.messages.length === 0) break;
      forward.push(ids(res));
      cursor = ids(res)[0]!;
    }
    expect(forward).toEqual([newestFirst.slice(2, 6), newestFirst.slice(0, 2)]);
    const between = await search(alice, { q: w, after: posted[1]!.id, before: posted[5]!.id });
    expect(ids(between)).toEqual([posted[4]!.id, posted[3]!.id, posted[2]!.id]);
  });

  it('follows edits and deletes at once', async () => {
    const [before, after] = [word(), word()];
    const message = await post(alice, general, `${before} draft`);
    expect((await search(alice, { q: before })).body.total).toBe(1);
    const edit = await g.call(alice, 'PATCH', `/v1/channels/${general}/messages/${message.id}`, { content: `${after} final` });
    expect(edit.status).toBe(200);
    expect((await search(alice, { q: before })).body).toEqual({ total: 0, messages: [] });
    const edited = await search(alice, { q: after });
    expect(edited.body.messages).toEqual([
      expect.objectContaining({ id: message.id, content: `${after} final`, editedAt: expect.any(String) }),
    ]);
    expect((await g.call(alice, 'DELETE', `/v1/channels/${general}/messages/${message.id}`)).status).toBe(204);
    expect((await search(alice, { q: after })).body).toEqual({ total: 0, messages: [] });
  });
});

describe('bad input', () => {
  it.each([
    ['missing', {}],
    ['empty', { q: '' }],
    ['only spaces', { q: '   ' }],
    ['over 200 characters', { q: 'a'.repeat(201) }],
    ['only punctuation', { q: '!!! ... ?' }],
    ['only excluded words', { q: '-spam -eggs' }],
    ['a NUL character', { q: 'a\u0000b' }],
  ])('answers 400 naming q when q is %s', async (_, query) => {
    const res = await search(alice, query);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: expect.stringMatching(/^query\.q: /) });
  });

  it.each([
    ['authorId', { authorId: 'nope' }],
    ['channelId', { channelId: '123' }],
    ['before', { before: 'x' }],
    ['after', { after: 'x' }],
    ['has', { has: 'image' }],
    ['limit', { limit: 101 }],
  ])('answers 400 naming %s when it is malformed', async (field, query) => {
    const res = await search(alice, { q: 'hello', ...query });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: expect.stringMatching(new RegExp(`^query\\.${field}: `)) });
  });

  it('accepts 200 characters and searches them', async () => {
    const res = await search(alice, { q: `${word()} ${'b'.repeat(188)}` });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ total: 0, messages: [] });
  });
});
