import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId, startGuilds } from './harness.ts';

const g = await startGuilds();
afterAll(() => g.close());

type Item = Record<string, unknown>;
const owner = newId();
let server: { id: string };

/**
 * Walks a list with `after` from the start to the last (short) page; `between` runs after each
 * page, to add rows while the walk goes on. Answers the keys in the order seen.
 */
async function walk(
  userId: string,
  url: string,
  key: (item: Item) => string,
  options: { limit?: number; between?: () => Promise<void> } = {},
): Promise<string[]> {
  const seen: string[] = [];
  const join = url.includes('?') ? '&' : '?';
  for (let after: string | undefined, pages = 0; pages < 50; pages++) {
    const query = [options.limit ? `limit=${options.limit}` : '', after ? `after=${after}` : ''].filter(Boolean).join('&');
    const res = await g.call(userId, 'GET', query ? `${url}${join}${query}` : url);
    expect(res.status).toBe(200);
    expect(Array.isArray(res.body)).toBe(true);
    seen.push(...res.body.map(key));
    if (res.body.length < (options.limit ?? 50)) return seen;
    after = seen.at(-1);
    await options.between?.();
  }
  throw new Error('too many pages');
}

const sorted = (keys: string[]) => [...keys].sort();

beforeAll(async () => {
  server = (await g.call(owner, 'POST', '/v1/servers', { name: 'Paging', requireApproval: true, isPublic: true })).body;
});

describe('GET servers/{id}/bans', () => {
  const banned: string[] = [];
  beforeAll(async () => {
    for (let i = 0; i < 60; i++) {
      const userId = await g.knownUser('banned');
      expect((await g.call(owner, 'PUT', `/v1/servers/${server.id}/bans/${userId}`, {})).status).toBe(200);
      banned.push(userId);
    }
  });

  it('answers a bare array of at most 50 by default, in user id order, and the rest after the cursor', async () => {
    const first = await g.call(owner, 'GET', `/v1/servers/${server.id}/bans`);
    expect(first.status).toBe(200);
    expect(first.body).toHaveLength(50);
    expect(first.body.map((b: Item) => b.userId)).toEqual(sorted(banned).slice(0, 50));
    const rest = await g.call(owner, 'GET', `/v1/servers/${server.id}/bans?after=${first.body[49].userId}`);
    expect(rest.body.map((b: Item) => b.userId)).toEqual(sorted(banned).slice(50));
  });

  it('pages backwards with before, answering the rows just below the cursor in ascending order', async () => {
    const all = sorted(banned);
    const res = await g.call(owner, 'GET', `/v1/servers/${server.id}/bans?before=${all[30]}&limit=5`);
    expect(res.body.map((b: Item) => b.userId)).toEqual(all.slice(25, 30));
    const between = await g.call(owner, 'GET', `/v1/servers/${server.id}/bans?after=${all[3]}&before=${all[7]}`);
    expect(between.body.map((b: Item) => b.userId)).toEqual(all.slice(4, 7));
  });

  it('sees every row exactly once while bans are added during the walk', async () => {
    const before = [...banned];
    const added: string[] = [];
    const seen = await walk(owner, `/v1/servers/${server.id}/bans`, (b) => b.userId as string, {
      limit: 7,
      between: async () => {
        const userId = await g.knownUser('late');
        await g.call(owner, 'PUT', `/v1/servers/${server.id}/bans/${userId}`, {});
        added.push(userId);
      },
    });
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen).toEqual(sorted(seen));
    for (const id of before) expect(seen).toContain(id);
    expect(seen.every((id) => before.includes(id) || added.includes(id))).toBe(true);
  });

  it('refuses a limit out of 1..100 and a cursor that is not a user id (400)', async () => {
    for (const query of ['limit=0', 'limit=101', 'limit=x', 'after=nope', 'before=nope', 'after=a%20b']) {
      const res = await g.call(owner, 'GET', `/v1/servers/${server.id}/bans?${query}`);
      expect(res.status, query).toBe(400);
      expect(res.body).toEqual({ error: expect.any(String) });
    }
    const { rows } = await g.db.query('SELECT count(*)::int AS n FROM bans WHERE server_id = $1', [server.id]);
    expect((await g.call(owner, 'GET', `/v1/servers/${server.id}/bans?limit=100`)).body).toHaveLength(Math.min(100, rows[0].n));
  });
});

describe('GET servers/{id}/invites', () => {
  it('pages by code with after and before, every invite once', async () => {
    const codes: string[] = [];
    for (let i = 0; i < 55; i++) codes.push((await g.call(owner, 'POST', `/v1/servers/${server.id}/invites`, {})).body.code);
    const seen = await walk(owner, `/v1/servers/${server.id}/invites`, (i) => i.code as string);
    expect(seen).toEqual(sorted(codes));
    const back = await g.call(owner, 'GET', `/v1/servers/${server.id}/invites?before=${sorted(codes)[10]}&limit=3`);
    expect(back.body.map((i: Item) => i.code)).toEqual(sorted(codes).slice(7, 10));
  });
});

describe('GET servers/{id}/join-requests', () => {
  it('pages the requests of one status by request id', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 53; i++) {
      const res = await g.call(newId(), 'POST', `/v1/servers/${server.id}/join-requests`, {});
      expect(res.status).toBe(201);
      ids.push(res.body.id);
    }
    const first = await g.call(owner, 'GET', `/v1/servers/${server.id}/join-requests?status=pending`);
    expect(first.body).toHaveLength(50);
    const seen = await walk(owner, `/v1/servers/${server.id}/join-requests?status=pending`, (r) => r.id as string, { limit: 20 });
    expect(seen).toEqual(sorted(ids));
    expect((await g.call(owner, 'GET', `/v1/servers/${server.id}/join-requests?status=approved`)).body).toEqual([]);
  });
});

describe('GET servers (mine)', () => {
  it('pages the caller’s servers by server id', async () => {
    const user = newId();
    const ids: string[] = [];
    for (let i = 0; i < 52; i++) ids.push((await g.call(user, 'POST', '/v1/servers', { name: `Mine ${i}` })).body.id);
    const first = await g.call(user, 'GET', '/v1/servers');
    expect(first.body).toHaveLength(50);
    expect(await walk(user, '/v1/servers', (s) => s.id as string, { limit: 10 })).toEqual(sorted(ids));
    expect((await g.call(user, 'GET', '/v1/servers?after=zzz')).status).toBe(400);
  });
});
