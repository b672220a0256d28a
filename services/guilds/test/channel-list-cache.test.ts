import { Permission, toMask } from '@chat/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId, startGuilds } from './harness.ts';

/**
 * Issue 18: each guilds process keeps every server's channel list between reads, and serves it only
 * while the list's version (bumped in the same transaction as any change of channels, overrides or
 * categories) is the one the request reads. A change therefore shows in the very next read, on the
 * process that made it and on every other replica, and a kept list never hides or shows a channel
 * that the rows do not.
 */
const g = await startGuilds();
const other = await g.replica();
afterAll(async () => {
  await other.close();
  await g.close();
});

const [owner, member] = [newId(), newId()];
let serverId: string;

const names = async (call: typeof g.call) => {
  const res = await call(member, 'GET', `/v1/servers/${serverId}/channels`);
  expect(res.status).toBe(200);
  return (res.body as { name: string }[]).map((c) => c.name);
};
const newChannel = async (name: string, categoryId?: string) => {
  const res = await g.call(owner, 'POST', `/v1/servers/${serverId}/channels`, { name, channelType: 'text', categoryId });
  expect(res.status).toBe(201);
  return res.body.id as string;
};
const newCategory = async (name: string) => {
  const res = await g.call(owner, 'POST', `/v1/servers/${serverId}/categories`, { name });
  expect(res.status).toBe(201);
  return res.body.id as string;
};
/** Both processes have read (and so keep) the list as it is now. */
const readOnBoth = async () => expect(await names(other.call)).toEqual(await names(g.call));

beforeAll(async () => {
  serverId = (await g.call(owner, 'POST', '/v1/servers', { name: 'Kept lists', isPublic: true })).body.id;
  expect((await g.call(member, 'POST', `/v1/servers/${serverId}/join`)).status).toBe(200);
});

describe('the kept channel list', () => {
  it('shows a renamed channel in the next read on every replica', async () => {
    const channelId = await newChannel('before-rename');
    await readOnBoth();
    const renamed = await g.call(owner, 'PATCH', `/v1/channels/${channelId}`, { name: 'after-rename' });
    expect(renamed.status).toBe(200);
    for (const call of [g.call, other.call]) {
      const listed = await names(call);
      expect(listed).toContain('after-rename');
      expect(listed).not.toContain('before-rename');
    }
  });

  it('hides a channel in the next read once an override denies VIEW_CHANNEL, and shows it again once the override is gone', async () => {
    const channelId = await newChannel('soon-hidden');
    await readOnBoth();
    const hidden = await g.call(owner, 'PUT', `/v1/channels/${channelId}/permissions`, {
      roleId: serverId,
      allowBits: 0,
      denyBits: toMask(Permission.VIEW_CHANNEL),
    });
    expect(hidden.status).toBe(200);
    expect(await names(other.call)).not.toContain('soon-hidden');
    expect(await names(g.call)).not.toContain('soon-hidden');
    expect((await g.call(owner, 'DELETE', `/v1/channels/${channelId}/permissions/${hidden.body.id}`)).status).toBe(204);
    expect(await names(other.call)).toContain('soon-hidden');
  });

  it('shows a new channel and drops a deleted one in the next read', async () => {
    await readOnBoth();
    const channelId = await newChannel('brand-new');
    expect(await names(other.call)).toContain('brand-new');
    expect((await g.call(owner, 'DELETE', `/v1/channels/${channelId}`)).status).toBe(204);
    expect(await names(other.call)).not.toContain('brand-new');
  });

  it('follows a reorder of the categories, which orders the channels', async () => {
    const [first, second] = [await newCategory('first'), await newCategory('second')];
    await newChannel('in-first', first);
    await newChannel('in-second', second);
    await readOnBoth();
    const before = await names(other.call);
    expect(before.indexOf('in-first')).toBeLessThan(before.indexOf('in-second'));
    const all = ((await g.call(owner, 'GET', `/v1/servers/${serverId}/categories`)).body as { id: string }[]).map((c) => c.id);
    const categoryIds = [second, first, ...all.filter((id) => id !== first && id !== second)];
    const reordered = await g.call(owner, 'PATCH', `/v1/servers/${serverId}/categories/positions`, { categoryIds });
    expect(reordered.status).toBe(200);
    const after = await names(other.call);
    expect(after.indexOf('in-second')).toBeLessThan(after.indexOf('in-first'));
  });

  it('sees a change written by any statement, not only by a route (the version is bumped by the database)', async () => {
    const channelId = await newChannel('written-in-sql');
    await readOnBoth();
    await g.db.query("UPDATE channels SET name = 'renamed-in-sql' WHERE id = $1", [channelId]);
    expect(await names(g.call)).toContain('renamed-in-sql');
    expect(await names(other.call)).toContain('renamed-in-sql');
    const { rows } = await g.db.query('SELECT version FROM channel_list_versions WHERE server_id = $1', [serverId]);
    expect(Number(rows[0].version)).toBeGreaterThan(0);
  });

  it('shows a channel that only a role may view once the member is given the role, and hides it once the role is taken', async () => {
    const channelId = await newChannel('for-the-role');
    const role = await g.call(owner, 'POST', `/v1/servers/${serverId}/roles`, { name: 'insiders', permissions: 0 });
    expect(role.status).toBe(201);
    for (const [roleId, allowBits, denyBits] of [
      [serverId, 0, toMask(Permission.VIEW_CHANNEL)],
      [role.body.id, toMask(Permission.VIEW_CHANNEL), 0],
    ] as const) {
      expect((await g.call(owner, 'PUT', `/v1/channels/${channelId}/permissions`, { roleId, allowBits, denyBits })).status).toBe(200);
    }
    // Both replicas keep the list and what this member sees of it.
    for (const call of [g.call, other.call]) expect(await names(call)).not.toContain('for-the-role');
    const roleOfMember = `/v1/servers/${serverId}/members/${member}/roles/${role.body.id}`;
    expect((await g.call(owner, 'PUT', roleOfMember)).status).toBe(204);
    for (const call of [g.call, other.call]) expect(await names(call)).toContain('for-the-role');
    expect((await g.call(owner, 'DELETE', roleOfMember)).status).toBe(204);
    for (const call of [g.call, other.call]) expect(await names(call)).not.toContain('for-the-role');
  });

  it('still refuses a stranger and a non-member, whatever it keeps', async () => {
    await readOnBoth();
    expect((await g.call(newId(), 'GET', `/v1/servers/${serverId}/channels`)).status).toBe(403);
    expect((await g.call(member, 'GET', `/v1/servers/${newId()}/channels`)).status).toBe(404);
  });
});

describe('reads of one channel from the kept list', () => {
  const page = (call: typeof g.call, channelId: string) => call(member, 'GET', `/v1/channels/${channelId}/messages?limit=50`);

  it('refuses the history at once on every replica once an override denies READ_MESSAGE_HISTORY, and allows it again once it is gone', async () => {
    const channelId = await newChannel('history');
    expect((await g.call(owner, 'POST', `/v1/channels/${channelId}/messages`, { content: 'kept' })).status).toBe(201);
    for (const call of [g.call, other.call]) expect((await page(call, channelId)).body).toHaveLength(1);
    const denied = await g.call(owner, 'PUT', `/v1/channels/${channelId}/permissions`, {
      userId: member,
      allowBits: 0,
      denyBits: toMask(Permission.READ_MESSAGE_HISTORY),
    });
    expect(denied.status).toBe(200);
    for (const call of [g.call, other.call]) {
      const refused = await page(call, channelId);
      expect(refused.status).toBe(403);
      expect(refused.body).toEqual({ error: 'Missing permission READ_MESSAGE_HISTORY' });
    }
    expect((await g.call(owner, 'DELETE', `/v1/channels/${channelId}/permissions/${denied.body.id}`)).status).toBe(204);
    expect((await page(other.call, channelId)).status).toBe(200);
  });

  it('answers 404 at once for a channel deleted since a replica kept its list', async () => {
    const channelId = await newChannel('doomed');
    for (const call of [g.call, other.call]) expect((await page(call, channelId)).status).toBe(200);
    expect((await g.call(owner, 'DELETE', `/v1/channels/${channelId}`)).status).toBe(204);
    const gone = await page(other.call, channelId);
    expect(gone.status).toBe(404);
    expect(gone.body).toEqual({ error: 'Channel not found' });
    expect((await other.call(member, 'GET', `/v1/channels/${channelId}`)).status).toBe(404);
  });

  it('shows a channel as it is now, renamed on another replica', async () => {
    const channelId = await newChannel('one-name');
    expect((await other.call(member, 'GET', `/v1/channels/${channelId}`)).body.name).toBe('one-name');
    expect((await g.call(owner, 'PATCH', `/v1/channels/${channelId}`, { name: 'another-name' })).status).toBe(200);
    const read = await other.call(member, 'GET', `/v1/channels/${channelId}`);
    expect(read.status).toBe(200);
    expect(read.body.name).toBe('another-name');
  });

  it('answers 404 for a channel id no server has, and for a member of another server', async () => {
    expect((await page(other.call, newId())).status).toBe(404);
    const channelId = await newChannel('members-only');
    await page(other.call, channelId);
    const stranger = await other.call(newId(), 'GET', `/v1/channels/${channelId}/messages`);
    expect(stranger.status).toBe(404);
  });
});
