import { randomBytes, randomUUID } from 'node:crypto';
import { Permission } from '@chat/contracts';
import { describe, expect, it } from 'vitest';
import { api, newUser, postMessage, publicServer, type TestUser } from './helpers.ts';

/** Webhooks, message search, the game index and server templates, through the gateway and the real services. */

const word = () => `w${randomBytes(5).toString('hex')}`;

async function newWebhook(owner: TestUser, channelId: string, name = 'Hook') {
  const res = await api('POST', `/v1/channels/${channelId}/webhooks`, { user: owner, body: { name } });
  expect(res.status).toBe(201);
  return res.body as { id: string; token: string };
}

async function contents(user: TestUser, channelId: string): Promise<string[]> {
  const res = await api('GET', `/v1/channels/${channelId}/messages?limit=100`, { user });
  expect(res.status).toBe(200);
  return (res.body as { content: string }[]).map((m) => m.content);
}

describe('executing a webhook through the gateway', () => {
  it("answers 401 to one webhook's id with another webhook's token, and posts nothing", async () => {
    const owner = await newUser('hook');
    const { textId } = await publicServer(owner);
    const [a, b] = [await newWebhook(owner, textId, 'A'), await newWebhook(owner, textId, 'B')];
    const content = word();
    const crossed = await api('POST', `/v1/webhooks/${a.id}/${b.token}`, { body: { content } });
    expect(crossed.status).toBe(401);
    expect(crossed.body).toEqual({ error: expect.any(String) });
    expect(await contents(owner, textId)).not.toContain(content);
  });

  it('never notifies @everyone, @here or a role that is not mentionable, and keeps mentionable roles and members', async () => {
    const [owner, member] = [await newUser('hook'), await newUser('hook')];
    const { serverId, textId } = await publicServer(owner, [member]);
    const role = async (body: Record<string, unknown>) => {
      const res = await api('POST', `/v1/servers/${serverId}/roles`, { user: owner, body });
      expect(res.status).toBe(201);
      return res.body.id as string;
    };
    const [quiet, loud] = [await role({ name: 'quiet' }), await role({ name: 'loud', mentionable: true })];
    const hook = await newWebhook(owner, textId);
    const content = `@everyone @here <@&${quiet}> <@&${loud}> <@${member.id}> <@${randomUUID()}>`;
    const res = await api('POST', `/v1/webhooks/${hook.id}/${hook.token}?wait=true`, { body: { content } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ content, webhookId: hook.id, authorId: hook.id });
    expect(res.body.mentions).toEqual({ users: [member.id], roles: [loud], everyone: false });
    const stored = (await api('GET', `/v1/channels/${textId}/messages?limit=1`, { user: member })).body[0];
    expect(stored).toMatchObject({ id: res.body.id, mentions: { users: [member.id], roles: [loud], everyone: false } });
  });

  it('answers 204 with no body for wait=false, and 400 for a wait that is not a boolean, posting only the first', async () => {
    const owner = await newUser('hook');
    const { textId } = await publicServer(owner);
    const hook = await newWebhook(owner, textId);
    const [posted, refused] = [word(), word()];
    const quiet = await api('POST', `/v1/webhooks/${hook.id}/${hook.token}?wait=false`, { body: { content: posted } });
    expect(quiet.status).toBe(204);
    expect(quiet.body).toBeUndefined();
    const bad = await api('POST', `/v1/webhooks/${hook.id}/${hook.token}?wait=yes`, { body: { content: refused } });
    expect(bad.status).toBe(400);
    expect(bad.body).toEqual({ error: expect.stringMatching(/wait/) });
    const seen = await contents(owner, textId);
    expect(seen).toContain(posted);
    expect(seen).not.toContain(refused);
  });

  it('answers 401 once its channel is deleted, as to a wrong token', async () => {
    const owner = await newUser('hook');
    const { serverId } = await publicServer(owner);
    const channel = await api('POST', `/v1/servers/${serverId}/channels`, { user: owner, body: { name: 'doomed', channelType: 'text' } });
    expect(channel.status).toBe(201);
    const hook = await newWebhook(owner, channel.body.id);
    const wrong = await api('POST', `/v1/webhooks/${hook.id}/${hook.token.slice(0, -1)}`, { body: { content: 'x' } });
    expect(wrong.status).toBe(401);
    expect((await api('DELETE', `/v1/channels/${channel.body.id}`, { user: owner })).status).toBe(204);
    const res = await api('POST', `/v1/webhooks/${hook.id}/${hook.token}?wait=true`, { body: { content: 'after the channel' } });
    expect(res.status).toBe(401);
    expect(res.body).toEqual(wrong.body);
    expect((await api('GET', `/v1/channels/${channel.body.id}/messages`, { user: owner })).status).toBe(404);
  });
});

describe('message search through the gateway', () => {
  it('reads tsquery operators as punctuation: a word among them finds its message, operators alone answer 400', async () => {
    const owner = await newUser('find');
    const { serverId, textId } = await publicServer(owner);
    const w = word();
    const id = await postMessage(owner, textId, `${w} alpha beta`);
    const search = (q: string) => api('GET', `/v1/servers/${serverId}/messages/search?q=${encodeURIComponent(q)}`, { user: owner });
    for (const q of [
      `${w} & alpha`,
      `${w} | alpha`,
      `!${w}`,
      `${w}:*`,
      `(${w}`,
      `${w} <-> alpha`,
      `"${w}`,
      `${w}'`,
      `${w}\\`,
      `${w} !! beta`,
    ]) {
      const res = await search(q);
      expect(res.status, q).toBe(200);
      expect(res.body, q).toMatchObject({ total: 1, messages: [{ id }] });
    }
    for (const q of ['&', '|', '!', ':*', '(', '<->', "'", '\\', '&&& |||']) {
      const res = await search(q);
      expect(res.status, q).toBe(400);
      expect(res.body, q).toEqual({ error: expect.stringMatching(/^query\.q: /) });
    }
  });
});

describe('the game index through the gateway', () => {
  it("reads %, _ and \\ as punctuation, not LIKE wildcards: '%' answers what no query answers", async () => {
    const player = await newUser('game');
    const games = async (query: string) => {
      const res = await api('GET', `/v1/games${query}`, { user: player });
      expect(res.status, query).toBe(200);
      return res.body as { name: string }[];
    };
    const firstPage = await games('');
    expect(firstPage).toHaveLength(20);
    for (const q of ['%', '_', '\\', '%%%%', '%_\\']) expect(await games(`?q=${encodeURIComponent(q)}`), q).toEqual(firstPage);
    expect(await games(`?q=${encodeURIComponent('%')}&limit=100`)).toEqual(await games('?limit=100'));
    const doom = await games('?q=doom');
    expect(doom[0]?.name).toBe('Doom');
    for (const q of ['doom%', 'doom_', 'doom\\', '%doom']) expect(await games(`?q=${encodeURIComponent(q)}`), q).toEqual(doom);
  });
});

describe('server templates through the gateway', () => {
  it('keeps a hidden channel out of sight of a member who joins the server imported from its export', async () => {
    const [owner, member] = [await newUser('tmpl'), await newUser('tmpl')];
    const { serverId } = await publicServer(owner);
    const staff = await api('POST', `/v1/servers/${serverId}/channels`, { user: owner, body: { name: 'staff', channelType: 'text' } });
    expect(staff.status).toBe(201);
    expect((await api('PATCH', `/v1/channels/${staff.body.id}`, { user: owner, body: { isHidden: true } })).status).toBe(200);

    const exported = await api('GET', `/v1/servers/${serverId}/template`, { user: owner });
    expect(exported.status).toBe(200);
    expect(exported.body.report).toEqual([
      expect.objectContaining({ kind: 'channel', id: staff.body.id, name: 'staff', outcome: 'changed' }),
    ]);
    const imported = await api('POST', '/v1/servers/import', { user: owner, body: { template: exported.body } });
    expect(imported.status).toBe(201);
    const copy = imported.body.server.id as string;
    const copiedStaff = (imported.body.report as { kind: string; name: string; id: string }[]).find(
      (r) => r.kind === 'channel' && r.name === 'staff',
    )?.id;
    expect(copiedStaff).toEqual(expect.any(String));

    expect((await api('PATCH', `/v1/servers/${copy}`, { user: owner, body: { isPublic: true } })).status).toBe(200);
    expect((await api('POST', `/v1/servers/${copy}/join`, { user: member })).status).toBe(200);
    const names = async (user: TestUser) =>
      ((await api('GET', `/v1/servers/${copy}/channels`, { user })).body as { name: string }[]).map((c) => c.name);
    expect(await names(member)).toEqual(['general', 'General']);
    expect(await names(owner)).toEqual(['staff', 'general', 'General']);
    expect((await api('GET', `/v1/channels/${copiedStaff}/messages`, { user: member })).status).toBe(404);
  });

  it('imports 250 roles, 500 channels and 2,000 overwrites in one 201 answer, within the gateway timeout', async () => {
    const owner = await newUser('tmpl');
    const roles = Array.from({ length: 250 }, (_, i) => ({ id: i, name: i === 0 ? '@everyone' : `r${i}`, permissions: '0' }));
    const deny = String(Permission.VIEW_CHANNEL);
    const overwrites = Array.from({ length: 100 }, (_, r) => ({ id: r + 1, type: 0, allow: '0', deny }));
    const channels = [
      ...Array.from({ length: 50 }, (_, c) => ({ id: 1 + c, type: 4, name: `cat${c}`, position: c })),
      ...Array.from({ length: 450 }, (_, c) => ({
        id: 100 + c,
        type: c % 2 ? 2 : 0,
        name: `c${c}`,
        position: c,
        parent_id: 1 + (c % 50),
        permission_overwrites: c < 20 ? overwrites : [],
      })),
    ];
    // A slow import meets the gateway's upstream timeout (a 504) before this test's own.
    const res = await api('POST', '/v1/servers/import', {
      user: owner,
      body: { template: { serialized_source_guild: { name: 'At the limits', roles, channels } } },
    });
    expect(res.status, JSON.stringify(res.body).slice(0, 300)).toBe(201);
    const tally: Record<string, number> = {};
    for (const { kind, outcome } of res.body.report as { kind: string; outcome: string }[]) {
      tally[`${kind} ${outcome}`] = (tally[`${kind} ${outcome}`] ?? 0) + 1;
    }
    expect(tally).toEqual({ 'role created': 250, 'category created': 50, 'channel created': 450, 'override created': 2000 });
    const serverId = res.body.server.id as string;
    expect((await api('GET', `/v1/servers/${serverId}/roles`, { user: owner })).body).toHaveLength(250);
    expect((await api('GET', `/v1/servers/${serverId}/channels`, { user: owner })).body).toHaveLength(450);
    expect((await api('GET', `/v1/servers/${serverId}/categories`, { user: owner })).body).toHaveLength(50);
  }, 60_000);
});
