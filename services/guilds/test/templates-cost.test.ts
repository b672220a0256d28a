import { afterAll, describe, expect, it } from 'vitest';
import { newId, startGuilds } from './harness.ts';

const g = await startGuilds();
afterAll(() => g.close());

const accessVersion = async (serverId: string) =>
  Number((await g.db.query('SELECT access_version FROM servers WHERE id = $1', [serverId])).rows[0].access_version);
const channelListVersion = async (serverId: string) =>
  Number((await g.db.query('SELECT version FROM channel_list_versions WHERE server_id = $1', [serverId])).rows[0]?.version ?? 0);
const outboxCount = async (subject: string) =>
  Number((await g.db.query('SELECT count(*) AS n FROM outbox WHERE subject = $1', [subject])).rows[0].n);

/** 250 roles (@everyone included) and 500 channels: 50 categories, 450 channels spread over them. */
function templateAtTheLimits() {
  const roles = Array.from({ length: 250 }, (_, i) => ({ id: i, name: i === 0 ? '@everyone' : `r${i}`, permissions: String(i) }));
  const channels = [
    ...Array.from({ length: 50 }, (_, c) => ({ id: 1 + c, type: 4, name: `cat${c}`, position: c })),
    ...Array.from({ length: 450 }, (_, c) => ({ id: 100 + c, type: c % 2 ? 2 : 0, name: `c${c}`, position: c, parent_id: 1 + (c % 50) })),
  ];
  return { serialized_source_guild: { name: 'At the limits', roles, channels } };
}

describe('POST /v1/servers/import at the documented limits', () => {
  it('creates 250 roles at exactly the template positions and 500 channels, bumping no version of the new server per row', async () => {
    const owner = newId();
    const res = await g.call(owner, 'POST', '/v1/servers/import', { template: templateAtTheLimits() });
    expect(res.status, JSON.stringify(res.body).slice(0, 300)).toBe(201);
    const serverId = res.body.server.id as string;

    const roles = (await g.call(owner, 'GET', `/v1/servers/${serverId}/roles`)).body as { id: string; name: string; position: number }[];
    expect(roles.map((r) => [r.position, r.name])).toEqual(Array.from({ length: 250 }, (_, i) => [i, i === 0 ? '@everyone' : `r${i}`]));
    const channels = (await g.call(owner, 'GET', `/v1/servers/${serverId}/channels`)).body as {
      id: string;
      name: string;
      position: number;
    }[];
    expect(channels).toHaveLength(450);
    // Nine channels per category, in template order: c0, c50, c100, ... in the first.
    expect(channels.slice(0, 9).map((c) => [c.position, c.name])).toEqual(Array.from({ length: 9 }, (_, i) => [i, `c${i * 50}`]));

    // Nobody could hold an access snapshot of a server that did not exist: no bump per row (there were ~31,000).
    expect(await accessVersion(serverId)).toBe(0);
    expect(await channelListVersion(serverId)).toBe(0);
    // At the limits one more is refused (as made one by one, docs/guilds-rules.md); every other path
    // still bumps: a role and a channel created afterwards, once there is room, move the versions.
    expect((await g.call(owner, 'POST', `/v1/servers/${serverId}/roles`, { name: 'later' })).status).toBe(400);
    expect((await g.call(owner, 'POST', `/v1/servers/${serverId}/channels`, { name: 'later', channelType: 'text' })).status).toBe(400);
    await g.db.query('DELETE FROM roles WHERE id = $1', [roles[249]!.id]);
    await g.db.query('DELETE FROM channels WHERE id = $1', [channels[449]!.id]);
    const [access, list] = [await accessVersion(serverId), await channelListVersion(serverId)];
    expect((await g.call(owner, 'POST', `/v1/servers/${serverId}/roles`, { name: 'later' })).status).toBe(201);
    expect(await accessVersion(serverId)).toBeGreaterThan(access);
    expect((await g.call(owner, 'POST', `/v1/servers/${serverId}/channels`, { name: 'later', channelType: 'text' })).status).toBe(201);
    expect(await channelListVersion(serverId)).toBe(list + 1);
  });
});

describe('POST /v1/servers/import bounds the overwrites it creates', () => {
  const roles = Array.from({ length: 250 }, (_, i) => ({ id: i, name: `r${i}`, permissions: '0' }));
  const overwrites = (n: number) => Array.from({ length: n }, (_, r) => ({ id: r, type: 0, allow: '0', deny: '1024' }));
  const channelsWith = (count: number, each: number) =>
    Array.from({ length: count }, (_, c) => ({ id: 1000 + c, type: 0, name: `c${c}`, permission_overwrites: overwrites(each) }));
  const serverCount = async () => Number((await g.db.query('SELECT count(*) AS n FROM servers')).rows[0].n);

  it.each([
    [
      '101 overwrites on one channel',
      channelsWith(1, 101),
      /channels\.0\.permission_overwrites: at most 100 permission overwrites per channel/,
    ],
    [
      '2,001 overwrites in all',
      channelsWith(21, 100).map((c, i) => (i === 20 ? { ...c, permission_overwrites: overwrites(1) } : c)),
      /at most 2000 permission overwrites in all/,
    ],
  ])('refuses %s with a 400, creating nothing', async (_name, channels, message) => {
    const before = await serverCount();
    const res = await g.call(newId(), 'POST', '/v1/servers/import', {
      template: { serialized_source_guild: { name: 'Flood', roles, channels } },
    });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatch(message);
    expect(await serverCount()).toBe(before);
  });

  it('creates 2,000 overwrites (the bound) with one event each, at most 100 on a channel', async () => {
    const owner = newId();
    const events = await outboxCount('guilds.override.updated');
    const res = await g.call(owner, 'POST', '/v1/servers/import', {
      template: { serialized_source_guild: { name: 'Many overwrites', roles, channels: channelsWith(20, 100) } },
    });
    expect(res.status, JSON.stringify(res.body).slice(0, 300)).toBe(201);
    const created = res.body.report.filter((r: { kind: string; outcome: string }) => r.kind === 'override' && r.outcome === 'created');
    expect(created).toHaveLength(2000);
    expect(new Set(created.map((r: { id: string }) => r.id)).size).toBe(2000);
    const stored = await g.db.query(
      'SELECT count(*) AS n FROM channel_overrides o JOIN channels c ON c.id = o.channel_id WHERE c.server_id = $1',
      [res.body.server.id],
    );
    expect(Number(stored.rows[0].n)).toBe(2000);
    expect((await outboxCount('guilds.override.updated')) - events).toBe(2000);
    const [channel] = (await g.call(owner, 'GET', `/v1/servers/${res.body.server.id}/channels`)).body;
    expect((await g.call(owner, 'GET', `/v1/channels/${channel.id}/permissions`)).body).toHaveLength(100);
    expect(await accessVersion(res.body.server.id)).toBe(0);
  });
});
