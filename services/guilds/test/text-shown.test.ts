import { randomUUID } from 'node:crypto';
import { MESSAGES_SUBJECTS } from '@chat/contracts';
import { afterAll, describe, expect, it } from 'vitest';
import { newId, startGuilds } from './harness.ts';

/** Text others see: names that show, text that cannot escape its place, one spelling of each. */

const g = await startGuilds();
afterAll(() => g.close());

const refused = { status: 400, body: { error: expect.any(String) } };
const strip = (res: { status: number; body: unknown }) => ({ status: res.status, body: res.body });

async function server(owner: string, extra: Record<string, unknown> = {}) {
  const res = await g.call(owner, 'POST', '/v1/servers', { name: 'Text', isPublic: true, ...extra });
  expect(res.status).toBe(201);
  return res.body as { id: string; name: string; tags: string[] };
}

describe('names of invisible marks only', () => {
  // Default-ignorable code points: combining grapheme joiner, variation selectors, Khmer inherent vowels, Mongolian selectors.
  const blanks = ['\u034F\u034F', '\uFE0F\uFE0F', '\u17B4\u17B5', '\u180B\u180C', '\u{E0100}'];

  it('are refused for servers, channels, categories, roles and nicknames, and nothing is made', async () => {
    const [owner, member] = [newId(), newId()];
    const { id } = await server(owner);
    expect((await g.call(member, 'POST', `/v1/servers/${id}/join`)).status).toBe(200);
    const before = (await g.db.query('SELECT count(*)::int AS n FROM channels WHERE server_id = $1', [id])).rows[0].n;
    for (const name of blanks) {
      const label = JSON.stringify(name);
      expect(strip(await g.call(owner, 'POST', '/v1/servers', { name })), label).toEqual(refused);
      expect(strip(await g.call(owner, 'POST', `/v1/servers/${id}/channels`, { name, channelType: 'text' })), label).toEqual(refused);
      expect(strip(await g.call(owner, 'POST', `/v1/servers/${id}/categories`, { name })), label).toEqual(refused);
      expect(strip(await g.call(owner, 'POST', `/v1/servers/${id}/roles`, { name })), label).toEqual(refused);
      expect(strip(await g.call(member, 'PATCH', `/v1/servers/${id}/members/@me`, { nickname: name })), label).toEqual(refused);
    }
    expect((await g.db.query('SELECT count(*)::int AS n FROM channels WHERE server_id = $1', [id])).rows[0].n).toBe(before);
    expect((await g.db.query('SELECT count(*)::int AS n FROM servers WHERE owner_id = $1', [owner])).rows[0].n).toBe(1);
    expect((await g.db.query('SELECT nickname FROM members WHERE server_id = $1 AND user_id = $2', [id, member])).rows).toEqual([
      { nickname: null },
    ]);
  });
});

describe('topics, descriptions and ban reasons', () => {
  it('refuse terminal escapes, bells and bidi overrides as a bio does, and keep what was there', async () => {
    const owner = newId();
    const member = await g.knownUser('member');
    const { id } = await server(owner, { description: 'plain' });
    expect((await g.call(member, 'POST', `/v1/servers/${id}/join`)).status).toBe(200);
    const channel = await g.newChannel(owner, id, 'general');
    for (const text of ['x\u202Ey', 'esc\u001b[2J', 'bell\u0007']) {
      const label = JSON.stringify(text);
      expect(strip(await g.call(owner, 'PATCH', `/v1/channels/${channel.id}`, { topic: text })), label).toEqual(refused);
      expect(strip(await g.call(owner, 'PATCH', `/v1/servers/${id}`, { description: text })), label).toEqual(refused);
      expect(strip(await g.call(owner, 'POST', '/v1/servers', { name: 'Another', description: text })), label).toEqual(refused);
      expect(strip(await g.call(owner, 'PUT', `/v1/servers/${id}/bans/${member}`, { reason: text })), label).toEqual(refused);
    }
    expect((await g.db.query('SELECT description FROM servers WHERE id = $1', [id])).rows).toEqual([{ description: 'plain' }]);
    expect((await g.db.query('SELECT topic FROM channels WHERE id = $1', [channel.id])).rows).toEqual([{ topic: null }]);
    expect((await g.db.query('SELECT 1 FROM bans WHERE server_id = $1', [id])).rows).toEqual([]);
    // Lines are fine, as in a bio.
    const lines = await g.call(owner, 'PATCH', `/v1/channels/${channel.id}`, { topic: 'rules:\r\n1. be kind\n2.\tno spam' });
    expect(lines.status).toBe(200);
    expect(lines.body.topic).toBe('rules:\r\n1. be kind\n2.\tno spam');
  });
});

describe('one spelling of a name', () => {
  it('stores a name in NFC, and discovery finds it by either spelling', async () => {
    const owner = newId();
    const word = randomUUID().slice(0, 8);
    const created = await server(owner, { name: `  Cafe\u0301 ${word}  `, description: `Re\u0301sume\u0301 ${word}` });
    expect(created.name).toBe(`Caf\u00e9 ${word}`);
    expect((await g.db.query('SELECT name, description FROM servers WHERE id = $1', [created.id])).rows).toEqual([
      { name: `Caf\u00e9 ${word}`, description: `R\u00e9sum\u00e9 ${word}` },
    ]);
    for (const q of [`Caf\u00e9 ${word}`, `Cafe\u0301 ${word}`, `R\u00e9sum\u00e9 ${word}`, `Re\u0301sume\u0301 ${word}`]) {
      const found = await g.call(owner, 'GET', `/v1/discovery/servers?q=${encodeURIComponent(q)}`);
      expect(found.status).toBe(200);
      expect(
        found.body.map((s: { id: string }) => s.id),
        q,
      ).toEqual([created.id]);
    }
  });

  it('keeps one tag of the same word in NFC, NFD and another case, and finds it by each', async () => {
    const owner = newId();
    const word = `t${randomUUID().slice(0, 6)}`;
    const created = await server(owner, { tags: [`${word}caf\u00e9`, `${word}cafe\u0301`, `${word.toUpperCase()}CAF\u00c9`] });
    expect(created.tags).toEqual([`${word}caf\u00e9`]);
    const patched = await g.call(owner, 'PATCH', `/v1/servers/${created.id}`, { tags: [`${word}Cafe\u0301`, `${word}caf\u00e9`] });
    expect(patched.body.tags).toEqual([`${word}Caf\u00e9`]);
    expect((await g.db.query('SELECT tags FROM servers WHERE id = $1', [created.id])).rows).toEqual([{ tags: [`${word}Caf\u00e9`] }]);
    const found = await g.call(owner, 'GET', `/v1/discovery/servers?tag=${encodeURIComponent(`${word}cafe\u0301`)}`);
    expect(found.body.map((s: { id: string }) => s.id)).toEqual([created.id]);
  });
});

describe('custom emoji reactions', () => {
  it('are one reaction whatever the case of the name or the id, told and stored in lower case', async () => {
    const owner = newId();
    const { id } = await server(owner);
    const channel = await g.newChannel(owner, id, 'general');
    const message = await g.call(owner, 'POST', `/v1/channels/${channel.id}/messages`, { content: 'react' });
    const emojiId = randomUUID();
    const url = (emoji: string) => `/v1/channels/${channel.id}/messages/${message.body.id}/reactions/${encodeURIComponent(emoji)}/@me`;
    for (const emoji of [`party:${emojiId}`, `PARTY:${emojiId}`, `party:${emojiId.toUpperCase()}`])
      expect((await g.call(owner, 'PUT', url(emoji))).status).toBe(204);
    const listed = await g.call(owner, 'GET', `/v1/channels/${channel.id}/messages?limit=5`);
    const reacted = listed.body.find((m: { id: string }) => m.id === message.body.id);
    expect(reacted.reactions).toEqual({ [`party:${emojiId}`]: { count: 1, me: true } });
    const told = (await g.outbox(MESSAGES_SUBJECTS.reactionAdded)).map((e) => e.data).filter((d) => d.messageId === message.body.id);
    expect(told.map((d) => d.emoji)).toEqual([`party:${emojiId}`]);
    expect((await g.call(owner, 'DELETE', url(`Party:${emojiId.toUpperCase()}`))).status).toBe(204);
    expect((await g.db.query('SELECT emoji FROM message_reactions WHERE message_id = $1', [message.body.id])).rows).toEqual([]);
  });
});
