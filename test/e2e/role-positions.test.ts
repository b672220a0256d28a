import { type Frame, GatewayClient } from '@chat/testkit';
import { describe, expect, it } from 'vitest';
import { api, gateway, newUser, publicServer, randomIp, type TestUser } from './helpers.ts';

/**
 * Role positions through the gateway: a member who applies ROLE_CREATE, ROLE_UPDATE and ROLE_DELETE
 * from the socket holds the roles REST lists, also for the roles a create, a move or a delete only
 * shifted (guilds.role.shifted, dispatched as ROLE_UPDATE); and writes at once leave positions 0..n-1.
 */

type Role = { id: string; position: number };

/** The body of a call that must answer `status`. */
const expectStatus = async (pending: ReturnType<typeof api>, status: number) => {
  const res = await pending;
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  return res.body;
};

/** A role made by `owner`, from a client IP of its own so that roles made at once meet no rate limit. */
const createRole = async (owner: TestUser, serverId: string, name: string): Promise<Role> =>
  expectStatus(api('POST', `/v1/servers/${serverId}/roles`, { user: owner, ip: randomIp(), body: { name } }), 201);

/** The server's roles as REST lists them, lowest first, @everyone (position 0) included. */
const rolesOf = async (owner: TestUser, serverId: string): Promise<Role[]> =>
  expectStatus(api('GET', `/v1/servers/${serverId}/roles`, { user: owner }), 200);

/** The roles of `serverId` (@everyone aside) as a client holds them after applying its role dispatches in order. */
function rolesFromDispatches(frames: Frame[], serverId: string): Record<string, unknown> {
  const roles = new Map<string, unknown>();
  for (const { t, d } of frames) {
    if (d?.serverId !== serverId || d.id === serverId) continue;
    if (t === 'ROLE_CREATE' || t === 'ROLE_UPDATE') roles.set(d.id, d);
    if (t === 'ROLE_DELETE') roles.delete(d.id);
  }
  return Object.fromEntries(roles);
}

describe('role positions on the socket', () => {
  it('tells members the new position of every role a create, a move or a delete shifted, so they hold what REST lists', async () => {
    const [owner, member] = [await newUser('own'), await newUser('mem')];
    const { serverId } = await publicServer(owner, [member]);
    const socket = await GatewayClient.connect(gateway, { ip: member.ip });
    try {
      await socket.identify(member.token);
      // Each create goes in at position 1 and shifts those above it: C=1, B=2, A=3.
      const a = await createRole(owner, serverId, 'A');
      const b = await createRole(owner, serverId, 'B');
      const c = await createRole(owner, serverId, 'C');
      // C to the top shifts A and B down; deleting B then shifts A down again.
      await expectStatus(api('PATCH', `/v1/servers/${serverId}/roles/${c.id}`, { user: owner, body: { position: 3 } }), 200);
      await expectStatus(api('DELETE', `/v1/servers/${serverId}/roles/${b.id}`, { user: owner }), 204);
      // Dispatched after every role event above: once it is here, they all are.
      await expectStatus(api('PATCH', `/v1/servers/${serverId}`, { user: owner, body: { description: 'roles settled' } }), 200);
      await socket.dispatch('SERVER_UPDATE', (d) => d.id === serverId && d.description === 'roles settled');

      const rest = (await rolesOf(owner, serverId)).filter((r) => r.id !== serverId);
      expect(rest.map((r) => [r.id, r.position])).toEqual([
        [a.id, 1],
        [c.id, 2],
      ]);
      expect(rolesFromDispatches(socket.dispatches(), serverId)).toEqual(Object.fromEntries(rest.map((r) => [r.id, r])));
    } finally {
      socket.close();
    }
  });
});

describe('role positions under writes at once', () => {
  it('keeps positions 0..n-1, each held once, when roles are created, moved and deleted at once', async () => {
    const owner = await newUser('own');
    const { serverId } = await publicServer(owner);
    const base = await Promise.all(Array.from({ length: 6 }, (_, i) => createRole(owner, serverId, `base ${i}`)));
    const [moved, deleted] = [base.slice(0, 3), base.slice(3)];
    const roles = `/v1/servers/${serverId}/roles`;
    const answers = await Promise.all([
      ...Array.from({ length: 8 }, (_, i) => api('POST', roles, { user: owner, ip: randomIp(), body: { name: `new ${i}` } })),
      // Positions 1 to 3 exist whichever of the writes land first: at least @everyone and the three moved roles remain.
      ...moved.map((r, i) => api('PATCH', `${roles}/${r.id}`, { user: owner, ip: randomIp(), body: { position: 1 + i } })),
      ...deleted.map((r) => api('DELETE', `${roles}/${r.id}`, { user: owner, ip: randomIp() })),
    ]);
    expect(answers.map((a) => a.status).sort()).toEqual([...Array(3).fill(200), ...Array(8).fill(201), ...Array(3).fill(204)]);

    const after = await rolesOf(owner, serverId);
    const created = answers.filter((a) => a.status === 201).map((a) => a.body.id as string);
    expect(after.map((r) => r.id).sort()).toEqual([serverId, ...moved.map((r) => r.id), ...created].sort());
    expect(after.map((r) => r.position)).toEqual(after.map((_, i) => i));
  });
});
