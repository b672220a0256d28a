import { DEFAULT_EVERYONE_PERMISSIONS, toMask } from '@chat/contracts';
import { afterAll, describe, expect, it } from 'vitest';
import { newId, startGuilds } from './harness.ts';

const g = await startGuilds();
afterAll(() => g.close());

async function makeServer(owner: string, body: Record<string, unknown> = {}) {
  const res = await g.call(owner, 'POST', '/v1/servers', { name: 'Test server', ...body });
  expect(res.status).toBe(201);
  return res.body;
}

const count = async (sql: string, params: unknown[]) => Number((await g.db.query(sql, params)).rows[0].n);

describe('POST /v1/servers', () => {
  it('makes the caller owner and first member, with @everyone and a category holding a text and a voice channel', async () => {
    const owner = newId();
    const res = await g.call(owner, 'POST', '/v1/servers', {
      name: 'Guild',
      description: 'd',
      isPublic: true,
      tags: ['games', 'games', 'art'],
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      name: 'Guild',
      description: 'd',
      ownerId: owner,
      isPublic: true,
      requireApproval: false,
      iconUrl: null,
      bannerUrl: null,
      entranceChannelId: null,
      afkChannelId: null,
      jtcChannelId: null,
      tags: ['games', 'art'],
      djRoleIds: [],
    });
    const id = res.body.id;
    expect(await count('SELECT count(*) n FROM members WHERE server_id = $1 AND user_id = $2', [id, owner])).toBe(1);
    const roles = await g.call(owner, 'GET', `/v1/servers/${id}/roles`);
    expect(roles.body).toEqual([
      expect.objectContaining({ id, name: '@everyone', position: 0, permissions: toMask(DEFAULT_EVERYONE_PERMISSIONS) }),
    ]);
    const categories = await g.call(owner, 'GET', `/v1/servers/${id}/categories`);
    expect(categories.body).toHaveLength(1);
    const channels = await g.call(owner, 'GET', `/v1/servers/${id}/channels`);
    expect(channels.body.map((c: { channelType: string; categoryId: string }) => [c.channelType, c.categoryId])).toEqual([
      ['text', categories.body[0].id],
      ['voice', categories.body[0].id],
    ]);
    const created = await g.outbox('guilds.server.created');
    expect(created.some((e) => e.data.id === id)).toBe(true);
    const joined = await g.outbox('guilds.member.joined');
    expect(joined.some((e) => e.data.serverId === id && e.data.userId === owner)).toBe(true);
  });

  it('refuses a bad body with 400 and creates nothing', async () => {
    const owner = newId();
    for (const body of [
      {},
      { name: 'x' },
      { name: 'x'.repeat(101) },
      { name: 'ok name', tags: Array(11).fill('t') },
      { name: 'ok name', tags: ['x'.repeat(25)] },
      { name: 'ok name', iconUrl: 'not a url' },
      { name: 'ok name', iconUrl: 'javascript:alert(1)' },
    ]) {
      const res = await g.call(owner, 'POST', '/v1/servers', body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body).toEqual({ error: expect.any(String) });
    }
    expect(await count('SELECT count(*) n FROM servers WHERE owner_id = $1', [owner])).toBe(0);
  });

  it('answers 401 without a token', async () => {
    expect((await g.call(null, 'POST', '/v1/servers', { name: 'Guild' })).status).toBe(401);
  });
});

describe('GET /v1/servers and /v1/servers/{id}', () => {
  it('lists only my servers', async () => {
    const [me, other] = [newId(), newId()];
    const mine = await makeServer(me);
    await makeServer(other);
    const res = await g.call(me, 'GET', '/v1/servers');
    expect(res.status).toBe(200);
    expect(res.body.map((s: { id: string }) => s.id)).toEqual([mine.id]);
  });

  it('shows a public server to anyone, and a private one only to members (404 otherwise)', async () => {
    const owner = newId();
    const open = await makeServer(owner, { isPublic: true });
    const closed = await makeServer(owner);
    expect((await g.call(newId(), 'GET', `/v1/servers/${open.id}`)).body.id).toBe(open.id);
    expect((await g.call(newId(), 'GET', `/v1/servers/${closed.id}`)).status).toBe(404);
    expect((await g.call(owner, 'GET', `/v1/servers/${closed.id}`)).status).toBe(200);
    expect((await g.call(owner, 'GET', `/v1/servers/${newId()}`)).status).toBe(404);
    expect((await g.call(owner, 'GET', '/v1/servers/not-a-uuid')).status).toBe(400);
  });
});

describe('PATCH /v1/servers/{id}', () => {
  it('changes any subset, checks channel pointers against this server, and null clears them', async () => {
    const owner = newId();
    const server = await makeServer(owner);
    const other = await makeServer(owner);
    const channels = (await g.call(owner, 'GET', `/v1/servers/${server.id}/channels`)).body;
    const text = channels.find((c: { channelType: string }) => c.channelType === 'text');
    const voice = channels.find((c: { channelType: string }) => c.channelType === 'voice');
    const foreignText = (await g.call(owner, 'GET', `/v1/servers/${other.id}/channels`)).body[0];
    // Not the join-to-create channel: nobody stays there (test/afk.test.ts).
    const afk = (await g.call(owner, 'POST', `/v1/servers/${server.id}/channels`, { name: 'afk', channelType: 'voice' })).body;

    const ok = await g.call(owner, 'PATCH', `/v1/servers/${server.id}`, {
      name: 'Renamed',
      entranceChannelId: text.id,
      afkChannelId: afk.id,
      jtcChannelId: voice.id,
      tags: ['a'],
      requireApproval: true,
    });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({
      name: 'Renamed',
      entranceChannelId: text.id,
      afkChannelId: afk.id,
      jtcChannelId: voice.id,
      tags: ['a'],
      requireApproval: true,
    });

    for (const body of [
      { entranceChannelId: voice.id },
      { afkChannelId: text.id },
      { entranceChannelId: foreignText.id },
      { jtcChannelId: newId() },
      { name: 'x' },
      { tags: Array(11).fill('t') },
      { isPublic: 'yes' },
      { entranceChannelId: 'nope' },
      { iconUrl: 'javascript:alert(1)' },
      { bannerUrl: 'data:text/html,<script>alert(1)</script>' },
      { bannerUrl: 'file:///etc/passwd' },
    ]) {
      const res = await g.call(owner, 'PATCH', `/v1/servers/${server.id}`, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
    }
    expect((await g.call(owner, 'GET', `/v1/servers/${server.id}`)).body).toMatchObject({ name: 'Renamed', entranceChannelId: text.id });

    const cleared = await g.call(owner, 'PATCH', `/v1/servers/${server.id}`, { entranceChannelId: null });
    expect(cleared.body.entranceChannelId).toBeNull();
    expect(cleared.body.afkChannelId).toBe(afk.id);
    expect((await g.outbox('guilds.server.updated')).filter((e) => e.data.id === server.id)).toHaveLength(2);

    for (const channel of [voice, afk]) expect((await g.call(owner, 'DELETE', `/v1/channels/${channel.id}`)).status).toBe(204);
    expect((await g.call(owner, 'GET', `/v1/servers/${server.id}`)).body).toMatchObject({ afkChannelId: null, jtcChannelId: null });
    const updates = (await g.outbox('guilds.server.updated')).filter((e) => e.data.id === server.id);
    expect(updates.at(-1)?.data).toMatchObject({ afkChannelId: null, jtcChannelId: null });
  });

  it('needs MANAGE_SERVER: a plain member gets 403 and nothing changes', async () => {
    const [owner, member] = [newId(), newId()];
    const server = await makeServer(owner, { isPublic: true });
    await g.call(member, 'POST', `/v1/servers/${server.id}/join`);
    const res = await g.call(member, 'PATCH', `/v1/servers/${server.id}`, { name: 'Hijacked' });
    expect(res.status).toBe(403);
    expect((await g.call(owner, 'GET', `/v1/servers/${server.id}`)).body.name).toBe('Test server');
  });
});

describe('DELETE /v1/servers/{id}', () => {
  it('is the owner’s alone; everything inside goes with it', async () => {
    const [owner, member] = [newId(), newId()];
    const server = await makeServer(owner, { isPublic: true });
    await g.call(member, 'POST', `/v1/servers/${server.id}/join`);
    expect((await g.call(member, 'DELETE', `/v1/servers/${server.id}`)).status).toBe(403);
    expect((await g.call(newId(), 'DELETE', `/v1/servers/${server.id}`)).status).toBe(403);
    expect((await g.call(owner, 'DELETE', `/v1/servers/${server.id}`)).status).toBe(204);
    expect((await g.call(owner, 'GET', `/v1/servers/${server.id}`)).status).toBe(404);
    expect(await count('SELECT count(*) n FROM channels WHERE server_id = $1', [server.id])).toBe(0);
    const deleted = (await g.outbox('guilds.server.deleted')).find((e) => e.data.id === server.id);
    // Who was a member: the real-time socket tells them, though the members are gone.
    expect([...((deleted?.data.memberIds as string[] | undefined) ?? [])].sort()).toEqual([owner, member].sort());
  });
});

describe('POST /v1/servers/{id}/join', () => {
  it('answers 200 with the Server, then 409 when already a member', async () => {
    const [owner, user] = [newId(), newId()];
    const server = await makeServer(owner, { isPublic: true });
    const first = await g.call(user, 'POST', `/v1/servers/${server.id}/join`);
    expect(first.status).toBe(200);
    expect(first.body).toEqual(server);
    const again = await g.call(user, 'POST', `/v1/servers/${server.id}/join`);
    expect(again.status).toBe(409);
    expect(again.body.error).toMatch(/already a member/i);
    expect(await count('SELECT member_count n FROM servers WHERE id = $1', [server.id])).toBe(2);
  });

  it('answers 404 for a private server (as for an unknown one), 400 for one requiring approval (naming the join request) and a banned caller', async () => {
    const owner = newId();
    const closed = await makeServer(owner);
    const approval = await makeServer(owner, { isPublic: true, requireApproval: true });
    const open = await makeServer(owner, { isPublic: true });
    const banned = await g.knownUser('banned');
    expect((await g.call(owner, 'PUT', `/v1/servers/${open.id}/bans/${banned}`, {})).status).toBe(200);

    const privateJoin = await g.call(newId(), 'POST', `/v1/servers/${closed.id}/join`);
    expect(privateJoin).toMatchObject({ status: 404, body: { error: 'Server not found' } });
    const needsRequest = await g.call(newId(), 'POST', `/v1/servers/${approval.id}/join`);
    expect(needsRequest.status).toBe(400);
    expect(needsRequest.body.error).toMatch(/join request/);
    const bannedJoin = await g.call(banned, 'POST', `/v1/servers/${open.id}/join`);
    expect(bannedJoin.status).toBe(400);
    expect(bannedJoin.body.error).toMatch(/banned/);
    expect(await count('SELECT count(*) n FROM members WHERE user_id = $1', [banned])).toBe(0);
  });

  it('answers 404 for an unknown server, 400 for a malformed id and 401 without a token', async () => {
    expect((await g.call(newId(), 'POST', `/v1/servers/${newId()}/join`)).status).toBe(404);
    expect((await g.call(newId(), 'POST', '/v1/servers/123/join')).status).toBe(400);
    expect((await g.call(null, 'POST', `/v1/servers/${newId()}/join`)).status).toBe(401);
  });

  it('lets exactly one of many concurrent joins by one user succeed', async () => {
    const [owner, user] = [newId(), newId()];
    const server = await makeServer(owner, { isPublic: true });
    const results = await Promise.all(Array.from({ length: 8 }, () => g.call(user, 'POST', `/v1/servers/${server.id}/join`)));
    expect(results.map((r) => r.status).sort()).toEqual([200, 409, 409, 409, 409, 409, 409, 409]);
    expect(await count('SELECT count(*) n FROM members WHERE server_id = $1', [server.id])).toBe(2);
    expect(await count('SELECT member_count n FROM servers WHERE id = $1', [server.id])).toBe(2);
    expect((await g.outbox('guilds.member.joined')).filter((e) => e.data.serverId === server.id && e.data.userId === user)).toHaveLength(1);
  });
});

describe('GET /v1/discovery/servers', () => {
  it('lists public servers matching name, description and tag, most members first, in pages', async () => {
    const owner = newId();
    const tag = `t${newId().slice(0, 8)}`;
    const big = await makeServer(owner, { name: `Zebra ${tag}`, isPublic: true, tags: [tag] });
    const small = await makeServer(owner, { name: 'Quiet place', description: `about ${tag}`, isPublic: true, tags: [tag] });
    await makeServer(owner, { name: `Hidden ${tag}`, tags: [tag] });
    for (let i = 0; i < 2; i++) await g.call(newId(), 'POST', `/v1/servers/${big.id}/join`);

    const byText = await g.call(owner, 'GET', `/v1/discovery/servers?q=${tag}`);
    expect(byText.status).toBe(200);
    expect(byText.body.map((s: { id: string; memberCount: number }) => [s.id, s.memberCount])).toEqual([
      [big.id, 3],
      [small.id, 1],
    ]);
    const byTag = await g.call(owner, 'GET', `/v1/discovery/servers?tag=${tag.toUpperCase()}`);
    expect(byTag.body.map((s: { id: string }) => s.id)).toEqual([big.id, small.id]);
    const page1 = await g.call(owner, 'GET', `/v1/discovery/servers?tag=${tag}&limit=1`);
    const page2 = await g.call(owner, 'GET', `/v1/discovery/servers?tag=${tag}&limit=1&before=${page1.body[0].id}`);
    expect([page1.body[0].id, page2.body[0].id]).toEqual([big.id, small.id]);
    expect((await g.call(owner, 'GET', '/v1/discovery/servers?q=%25%25%25_')).body).toEqual([]);
    expect((await g.call(owner, 'GET', '/v1/discovery/servers?limit=1000')).status).toBe(400);
  });

  it('pages on from the count a page showed (beforeMemberCount): no server repeated or skipped while counts change', async () => {
    const owner = newId();
    const tag = `c${newId().slice(0, 8)}`;
    const servers = [];
    for (const members of [4, 3, 2, 1]) {
      const server = await makeServer(owner, { name: `Ranked ${members}`, isPublic: true, tags: [tag] });
      for (let i = 1; i < members; i++) await g.call(newId(), 'POST', `/v1/servers/${server.id}/join`);
      servers.push(server.id);
    }
    const ids = (page: { body: { id: string }[] }) => page.body.map((s) => s.id);
    const first = await g.call(owner, 'GET', `/v1/discovery/servers?tag=${tag}&limit=2`);
    expect(ids(first)).toEqual(servers.slice(0, 2));
    const last = first.body[1] as { id: string; memberCount: number };
    // The second server grows past the first between the two pages.
    for (let i = 0; i < 2; i++) await g.call(newId(), 'POST', `/v1/servers/${last.id}/join`);
    const cursor = `before=${last.id}&beforeMemberCount=${last.memberCount}`;
    expect(ids(await g.call(owner, 'GET', `/v1/discovery/servers?tag=${tag}&limit=2&${cursor}`))).toEqual(servers.slice(2));
    // By its count now, the cursor ranks above the first server: the page repeats it.
    expect(ids(await g.call(owner, 'GET', `/v1/discovery/servers?tag=${tag}&limit=2&before=${last.id}`))).toEqual([servers[0], servers[2]]);
    for (const count of [-1, 2 ** 31, 1.5]) {
      expect((await g.call(owner, 'GET', `/v1/discovery/servers?before=${last.id}&beforeMemberCount=${count}`)).status).toBe(400);
    }
  });

  it('answers a private server’s id as cursor like an unknown id, so its member count cannot be probed (issue 16)', async () => {
    const owner = newId();
    const tag = `p${newId().slice(0, 8)}`;
    const listed = await makeServer(owner, { name: `Listed ${tag}`, isPublic: true, tags: [tag] });
    const hidden = await makeServer(owner, { name: 'Hidden' });
    const code = (await g.call(owner, 'POST', `/v1/servers/${hidden.id}/invites`, {})).body.code;
    for (let i = 0; i < 2; i++) expect((await g.call(newId(), 'POST', `/v1/invites/${code}/accept`)).status).toBe(200);

    // Listed (1 member) ranks below Hidden (3): a private cursor would page on from Hidden's count.
    const fromHidden = await g.call(owner, 'GET', `/v1/discovery/servers?tag=${tag}&before=${hidden.id}`);
    const fromUnknown = await g.call(owner, 'GET', `/v1/discovery/servers?tag=${tag}&before=${newId()}`);
    expect(fromHidden.status).toBe(200);
    expect(fromHidden.body).toEqual([]);
    expect(fromUnknown.body).toEqual([]);
    expect((await g.call(owner, 'GET', `/v1/discovery/servers?tag=${tag}`)).body.map((s: { id: string }) => s.id)).toEqual([listed.id]);
  });
});
