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
