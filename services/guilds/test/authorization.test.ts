import { Permission, toMask } from '@chat/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId, startGuilds } from './harness.ts';

/**
 * The authorization matrix: every route asked by the owner, an administrator (by role), a plain
 * member, a member denied the channel by an override, a non-member and a banned user of a private
 * server. Each row states the six statuses, so a route that forgets its check shows up here.
 */
const g = await startGuilds();
afterAll(() => g.close());

const ACTORS = ['owner', 'admin', 'member', 'denied', 'stranger', 'banned'] as const;
type Actor = (typeof ACTORS)[number];
const ids = {} as Record<Actor, string>;
let serverId: string;
let secretId: string;
let spareRoleId: string;
let inviteCode: string;

beforeAll(async () => {
  for (const actor of ACTORS) ids[actor] = await g.knownUser(actor);
  serverId = (await g.call(ids.owner, 'POST', '/v1/servers', { name: 'Private matrix' })).body.id;
  inviteCode = (await g.call(ids.owner, 'POST', `/v1/servers/${serverId}/invites`, {})).body.code;
  for (const actor of ['admin', 'member', 'denied', 'banned'] as const) {
    expect((await g.call(ids[actor], 'POST', `/v1/invites/${inviteCode}/accept`)).status).toBe(200);
  }
  const admins = (
    await g.call(ids.owner, 'POST', `/v1/servers/${serverId}/roles`, { name: 'admins', permissions: toMask(Permission.ADMINISTRATOR) })
  ).body;
  expect((await g.call(ids.owner, 'PUT', `/v1/servers/${serverId}/members/${ids.admin}/roles/${admins.id}`)).status).toBe(204);
  spareRoleId = (await g.call(ids.owner, 'POST', `/v1/servers/${serverId}/roles`, { name: 'spare' })).body.id;
  secretId = (await g.call(ids.owner, 'POST', `/v1/servers/${serverId}/channels`, { name: 'secret', channelType: 'text' })).body.id;
  const deny = { userId: ids.denied, allowBits: 0, denyBits: toMask(Permission.VIEW_CHANNEL) };
  expect((await g.call(ids.owner, 'PUT', `/v1/channels/${secretId}/permissions`, deny)).status).toBe(200);
  expect((await g.call(ids.owner, 'PUT', `/v1/servers/${serverId}/bans/${ids.banned}`, { reason: 'matrix' })).status).toBe(200);
});

interface Row {
  name: string;
  method: string;
  path: (victim: string) => string;
  body?: unknown;
  /** A user this call acts on, fresh per actor (kick, ban). */
  victim?: 'member' | 'known';
  expect: [owner: number, admin: number, member: number, denied: number, stranger: number, banned: number];
}

const S = () => `/v1/servers/${serverId}`;
const C = () => `/v1/channels/${secretId}`;
const ROWS: Row[] = [
  { name: 'GET server', method: 'GET', path: S, expect: [200, 200, 200, 200, 404, 404] },
  { name: 'PATCH server', method: 'PATCH', path: S, body: { description: 'd' }, expect: [200, 200, 403, 403, 404, 404] },
  { name: 'DELETE server (not the owner)', method: 'DELETE', path: S, expect: [0, 403, 403, 403, 404, 404] },
  { name: 'GET channels', method: 'GET', path: () => `${S()}/channels`, expect: [200, 200, 200, 200, 404, 404] },
  {
    name: 'POST channel',
    method: 'POST',
    path: () => `${S()}/channels`,
    body: { name: 'c', channelType: 'text' },
    expect: [201, 201, 403, 403, 404, 404],
  },
  { name: 'GET channel', method: 'GET', path: C, expect: [200, 200, 200, 404, 404, 404] },
  { name: 'PATCH channel', method: 'PATCH', path: C, body: { topic: 't' }, expect: [200, 200, 403, 404, 404, 404] },
  { name: 'GET channel mask', method: 'GET', path: () => `${C()}/permissions/@me`, expect: [200, 200, 200, 404, 404, 404] },
  { name: 'GET overrides', method: 'GET', path: () => `${C()}/permissions`, expect: [200, 200, 200, 404, 404, 404] },
  {
    name: 'PUT override',
    method: 'PUT',
    path: () => `${C()}/permissions`,
    body: { roleId: '$spare', allowBits: 0, denyBits: 0 },
    expect: [200, 200, 403, 404, 404, 404],
  },
  { name: 'GET categories', method: 'GET', path: () => `${S()}/categories`, expect: [200, 200, 200, 200, 404, 404] },
  { name: 'POST category', method: 'POST', path: () => `${S()}/categories`, body: { name: 'k' }, expect: [201, 201, 403, 403, 404, 404] },
  { name: 'GET members', method: 'GET', path: () => `${S()}/members`, expect: [200, 200, 200, 200, 404, 404] },
  { name: 'GET my server mask', method: 'GET', path: () => `${S()}/members/@me/permissions`, expect: [200, 200, 200, 200, 404, 404] },
  { name: 'kick', method: 'DELETE', path: (v) => `${S()}/members/${v}`, victim: 'member', expect: [204, 204, 403, 403, 404, 404] },
  { name: 'GET roles', method: 'GET', path: () => `${S()}/roles`, expect: [200, 200, 200, 200, 404, 404] },
  { name: 'POST role', method: 'POST', path: () => `${S()}/roles`, body: { name: 'r' }, expect: [201, 201, 403, 403, 404, 404] },
  { name: 'GET bans', method: 'GET', path: () => `${S()}/bans`, expect: [200, 200, 403, 403, 404, 404] },
  { name: 'PUT ban', method: 'PUT', path: (v) => `${S()}/bans/${v}`, victim: 'known', body: {}, expect: [200, 200, 403, 403, 404, 404] },
  { name: 'POST invite', method: 'POST', path: () => `${S()}/invites`, expect: [201, 201, 201, 201, 404, 404] },
  { name: 'GET invites', method: 'GET', path: () => `${S()}/invites`, expect: [200, 200, 403, 403, 404, 404] },
  { name: 'GET join requests', method: 'GET', path: () => `${S()}/join-requests`, expect: [200, 200, 403, 403, 404, 404] },
  { name: 'POST join request', method: 'POST', path: () => `${S()}/join-requests`, expect: [409, 409, 409, 409, 404, 404] },
  { name: 'search messages', method: 'GET', path: () => `${S()}/messages/search?q=hello`, expect: [200, 200, 200, 200, 404, 404] },
];

async function victim(kind: Row['victim']): Promise<string> {
  if (!kind) return '';
  const id = await g.knownUser('victim');
  if (kind === 'member') expect((await g.call(id, 'POST', `/v1/invites/${inviteCode}/accept`)).status).toBe(200);
  return id;
}

describe('authorization matrix (owner, administrator, member, denied by override, non-member, banned)', () => {
  it.each(ROWS)('$name', async (row) => {
    const statuses: number[] = [];
    for (const [i, actor] of ACTORS.entries()) {
      if (row.expect[i] === 0) {
        statuses.push(0);
        continue;
      }
      const body = row.body && JSON.parse(JSON.stringify(row.body).replace('$spare', spareRoleId));
      const res = await g.call(ids[actor], row.method, row.path(await victim(row.victim)), body);
      if (res.status >= 400) expect(res.body, `${actor}: ${JSON.stringify(res.body)}`).toEqual({ error: expect.any(String) });
      statuses.push(res.status);
    }
    expect(statuses).toEqual(row.expect);
  });

  it('leaves the server standing after every refused delete, and lets the owner delete it', async () => {
    expect((await g.call(ids.owner, 'GET', S())).status).toBe(200);
    expect((await g.call(ids.owner, 'DELETE', S())).status).toBe(204);
    expect((await g.call(ids.admin, 'GET', S())).status).toBe(404);
  });
});

describe('a public server’s non-member', () => {
  it('sees the server but gets 403 on what only members may do', async () => {
    const owner = newId();
    const open = (await g.call(owner, 'POST', '/v1/servers', { name: 'Open', isPublic: true })).body;
    const stranger = newId();
    expect((await g.call(stranger, 'GET', `/v1/servers/${open.id}`)).status).toBe(200);
    for (const path of ['channels', 'members', 'roles', 'categories', 'members/@me/permissions', 'messages/search?q=hello']) {
      expect((await g.call(stranger, 'GET', `/v1/servers/${open.id}/${path}`)).status, path).toBe(403);
    }
    const channel = (await g.call(owner, 'GET', `/v1/servers/${open.id}/channels`)).body[0];
    expect((await g.call(stranger, 'GET', `/v1/channels/${channel.id}`)).status).toBe(404);
  });
});
