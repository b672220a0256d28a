import { ALL_PERMISSIONS, toMask } from '@chat/contracts';
import { afterAll, describe, expect, it } from 'vitest';
import { newId, startGuilds } from './harness.ts';

const g = await startGuilds();
afterAll(() => g.close());

const owner = newId();

/** The positions a client holds after applying the server's role events in outbox order, @everyone aside. */
async function positionsFromEvents(serverId: string): Promise<Record<string, number>> {
  const { rows } = await g.db.query<{ subject: string; payload: { data: { id: string; serverId: string; position?: number } } }>(
    "SELECT subject, payload FROM outbox WHERE subject LIKE 'guilds.role.%' AND payload->'data'->>'serverId' = $1 ORDER BY seq",
    [serverId],
  );
  const state = new Map<string, number>();
  for (const { subject, payload } of rows) {
    if (subject === 'guilds.role.deleted') state.delete(payload.data.id);
    else state.set(payload.data.id, payload.data.position as number);
  }
  state.delete(serverId);
  return Object.fromEntries(state);
}

async function positionsFromRest(serverId: string): Promise<Record<string, number>> {
  const res = await g.call(owner, 'GET', `/v1/servers/${serverId}/roles`);
  expect(res.status).toBe(200);
  const roles = res.body as { id: string; position: number }[];
  return Object.fromEntries(roles.filter((r) => r.id !== serverId).map((r) => [r.id, r.position]));
}

const createRole = async (serverId: string, name: string) => {
  const res = await g.call(owner, 'POST', `/v1/servers/${serverId}/roles`, { name });
  expect(res.status).toBe(201);
  return res.body as { id: string; position: number };
};

describe('role positions in events', () => {
  it('tells the new position of every role a create, a move or a delete shifted, so the events agree with REST', async () => {
    const serverId = (await g.call(owner, 'POST', '/v1/servers', { name: 'Role ladder' })).body.id as string;
    const a = await createRole(serverId, 'A');
    const b = await createRole(serverId, 'B');
    const c = await createRole(serverId, 'C');
    expect(await positionsFromEvents(serverId)).toEqual({ [a.id]: 3, [b.id]: 2, [c.id]: 1 });

    // C to the top: A and B move down one.
    expect((await g.call(owner, 'PATCH', `/v1/servers/${serverId}/roles/${c.id}`, { position: 3 })).status).toBe(200);
    expect(await positionsFromEvents(serverId)).toEqual({ [a.id]: 2, [b.id]: 1, [c.id]: 3 });

    // B goes: A and C close the gap.
    expect((await g.call(owner, 'DELETE', `/v1/servers/${serverId}/roles/${b.id}`)).status).toBe(204);
    const rest = await positionsFromRest(serverId);
    expect(rest).toEqual({ [a.id]: 1, [c.id]: 2 });
    expect(await positionsFromEvents(serverId)).toEqual(rest);
  });

  it('writes no event for a role that did not move', async () => {
    const serverId = (await g.call(owner, 'POST', '/v1/servers', { name: 'Role ladder 2' })).body.id as string;
    const low = await createRole(serverId, 'low');
    const mid = await createRole(serverId, 'mid');
    const top = await createRole(serverId, 'top');
    const changes = async () =>
      (
        await g.db.query<{ subject: string; data: { id: string; position: number } }>(
          "SELECT subject, payload->'data' AS data FROM outbox WHERE subject IN ('guilds.role.updated', 'guilds.role.shifted') ORDER BY seq",
        )
      ).rows.map((r) => ({ subject: r.subject, id: r.data.id, position: r.data.position }));
    const before = (await changes()).length;

    // top (1) to 2 swaps it with mid only; low (3) stays where it is. The role only shifted has a
    // subject of its own: the gateway keeps its audiences for it.
    expect((await g.call(owner, 'PATCH', `/v1/servers/${serverId}/roles/${top.id}`, { position: 2 })).status).toBe(200);
    expect((await changes()).slice(before)).toEqual([
      { subject: 'guilds.role.shifted', id: mid.id, position: 1 },
      { subject: 'guilds.role.updated', id: top.id, position: 2 },
    ]);
    expect(await positionsFromEvents(serverId)).toEqual({ [low.id]: 3, [mid.id]: 1, [top.id]: 2 });
  });
});

describe('what a role’s deletion takes with it, in events', () => {
  const newServer = async (name: string) => (await g.call(owner, 'POST', '/v1/servers', { name })).body.id as string;
  const newChannel = async (serverId: string, name: string) =>
    (await g.call(owner, 'POST', `/v1/servers/${serverId}/channels`, { name, channelType: 'text' })).body.id as string;
  const putOverride = async (channelId: string, roleId: string) => {
    const res = await g.call(owner, 'PUT', `/v1/channels/${channelId}/permissions`, { roleId, allowBits: 1 << 13, denyBits: 0 });
    expect(res.status).toBe(200);
    return res.body as { id: string; channelId: string };
  };
  const serverUpdates = async (serverId: string) => (await g.outbox('guilds.server.updated')).filter((e) => e.data.id === serverId);

  it('tells the deletion of each channel override the role took, so the events agree with REST', async () => {
    const serverId = await newServer('Overrides of a role');
    const [general, news] = [await newChannel(serverId, 'general'), await newChannel(serverId, 'news')];
    const doomed = await createRole(serverId, 'doomed');
    const kept = await createRole(serverId, 'kept');
    const taken = [await putOverride(general, doomed.id), await putOverride(news, doomed.id)];
    const left = await putOverride(general, kept.id);

    expect((await g.call(owner, 'DELETE', `/v1/servers/${serverId}/roles/${doomed.id}`)).status).toBe(204);

    const deleted = (await g.outbox('guilds.override.deleted'))
      .map((e) => e.data)
      .filter((d) => [general, news].includes(d.channelId as string));
    expect(deleted).toEqual(expect.arrayContaining(taken.map((o) => ({ id: o.id, channelId: o.channelId }))));
    expect(deleted).toHaveLength(2);
    const rest = [
      ...(await g.call(owner, 'GET', `/v1/channels/${general}/permissions`)).body,
      ...(await g.call(owner, 'GET', `/v1/channels/${news}/permissions`)).body,
    ];
    expect(rest.map((o: { id: string }) => o.id)).toEqual([left.id]);
  });

  it('tells the server’s new djRoleIds when the role was a DJ role, and nothing when it was not', async () => {
    const serverId = await newServer('DJ roles');
    const dj = await createRole(serverId, 'dj');
    const other = await createRole(serverId, 'other');
    expect((await g.call(owner, 'PATCH', `/v1/servers/${serverId}`, { djRoleIds: [dj.id, other.id] })).status).toBe(200);
    const before = (await serverUpdates(serverId)).length;

    expect((await g.call(owner, 'DELETE', `/v1/servers/${serverId}/roles/${dj.id}`)).status).toBe(204);

    const server = (await g.call(owner, 'GET', `/v1/servers/${serverId}`)).body;
    expect(server.djRoleIds).toEqual([other.id]);
    const updates = (await serverUpdates(serverId)).slice(before);
    expect(updates.map((e) => e.data)).toEqual([server]);

    const plain = await createRole(serverId, 'plain');
    expect((await g.call(owner, 'DELETE', `/v1/servers/${serverId}/roles/${plain.id}`)).status).toBe(204);
    expect(await serverUpdates(serverId)).toHaveLength(before + 1);
  });
});

describe('permission bits a role is given', () => {
  it('answers 400 naming the bits no permission has, to the owner too, and stores nothing', async () => {
    const serverId = (await g.call(owner, 'POST', '/v1/servers', { name: 'Undefined bits' })).body.id as string;
    const created = await g.call(owner, 'POST', `/v1/servers/${serverId}/roles`, { name: 'weird', permissions: 2 ** 40 });
    expect(created.status).toBe(400);
    expect(created.body).toEqual({ error: 'body.permissions: has permission bits this platform does not define: 40' });

    const role = await createRole(serverId, 'plain');
    const patched = await g.call(owner, 'PATCH', `/v1/servers/${serverId}/roles/${role.id}`, { permissions: 2 ** 40 + 2 ** 33 + 8 });
    expect(patched.status).toBe(400);
    expect(patched.body).toEqual({ error: 'body.permissions: has permission bits this platform does not define: 33, 40' });

    const roles = (await g.call(owner, 'GET', `/v1/servers/${serverId}/roles`)).body as { name: string; permissions: number }[];
    expect(roles.map((r) => r.name)).toEqual(['@everyone', 'plain']);
    expect(roles[1]!.permissions).toBe(0);
    // Every bit the platform defines is still the owner's to give.
    const everything = await g.call(owner, 'POST', `/v1/servers/${serverId}/roles`, { name: 'all', permissions: toMask(ALL_PERMISSIONS) });
    expect(everything.status).toBe(201);
    expect(everything.body.permissions).toBe(toMask(ALL_PERMISSIONS));
  });
});
