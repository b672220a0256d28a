import { type Membership, MembersPageRpc, ServersPageRpc, STREAMS } from '@chat/contracts';
import { type ConsumerHandle, ensureStream, serveRpc } from '@chat/kit';
import { v7 as uuidv7 } from 'uuid';
import { afterAll, describe, expect, it } from 'vitest';
import { MEMBERS_CONSUMER, SERVERS_CONSUMER, startGuildsReadModel } from '../src/bus/guilds.ts';
import { bearer, guildsServer, newAccount, outboxEvents, publishGuildsEvent, startAuth } from './helpers.ts';

// Auth on a fresh database whose GUILDS stream has already dropped its oldest events: what a
// restored or newly added auth sees once the streams keep EVENT_RETENTION_DAYS.
const auth = await startAuth({ env: { SERVER_OWNER_BADGE_MEMBERS: '3' } });
const { runtime } = auth;
await ensureStream(runtime.bus, STREAMS.guilds);
const consumers: ConsumerHandle[] = [];
afterAll(async () => {
  for (const c of consumers) await c.stop();
  await auth.app.close();
  await runtime.close();
});

/**
 * Guilds' `rpc.guilds.servers.page` and `rpc.guilds.members.page` contracts, answered from what the
 * test says guilds holds (guilds' own tests cover its real answers, services/guilds/test/bus.test.ts).
 */
const guilds = { servers: [] as { id: string; ownerId: string }[], members: [] as Membership[], asked: 0 };
const byKey =
  <T>(key: (row: T) => string) =>
  (a: T, b: T) =>
    key(a).localeCompare(key(b));
serveRpc(runtime.bus, runtime.log, ServersPageRpc, async ({ after, limit }) => {
  guilds.asked += 1;
  const servers = [...guilds.servers].sort(byKey((s) => s.id)).filter((s) => after === undefined || s.id > after);
  return { servers: servers.slice(0, limit) };
});
serveRpc(runtime.bus, runtime.log, MembersPageRpc, async ({ after, limit }) => {
  guilds.asked += 1;
  const key = (m: Membership) => `${m.serverId}/${m.userId}`;
  const members = [...guilds.members].sort(byKey(key)).filter((m) => after === undefined || key(m) > key(after));
  return { members: members.slice(0, limit) };
});
await runtime.bus.nc.flush();

const register = async () => {
  const res = await auth.app.inject({ method: 'POST', url: '/v1/auth/register', payload: newAccount('backfill') });
  expect(res.statusCode).toBe(201);
  return res.json() as { token: string; user: { id: string } };
};
const badgesOf = async (user: { token: string; user: { id: string } }) => {
  const res = await auth.app.inject({ method: 'GET', url: `/v1/users/${user.user.id}/badges`, headers: bearer(user.token) });
  expect(res.statusCode).toBe(200);
  return (res.json() as { id: string }[]).map((b) => b.id);
};
const membersOf = async (serverId: string) =>
  (await runtime.pool.query<{ members: number }>('SELECT members FROM guild_servers WHERE id = $1', [serverId])).rows[0]?.members;

describe("auth's read-model of servers and members, started after GUILDS dropped its oldest events", () => {
  it('is backfilled from guilds, without replaying the history it covers, and follows the events after', async () => {
    const [owner, former] = [await register(), await register()];
    const serverId = uuidv7();
    const [a, b, c] = [uuidv7(), uuidv7(), uuidv7()];
    // The stream's history: an older server's creation (dropped), then this one's, created by `former`,
    // four joins, c left, handed over to `owner`; guilds holds the state it led to.
    await publishGuildsEvent(runtime, 'guilds.server.created', guildsServer(uuidv7(), former.user.id));
    await publishGuildsEvent(runtime, 'guilds.server.created', guildsServer(serverId, former.user.id));
    for (const userId of [former.user.id, a, b, c]) await publishGuildsEvent(runtime, 'guilds.member.joined', { serverId, userId });
    await publishGuildsEvent(runtime, 'guilds.member.left', { serverId, userId: c, reason: 'left', by: c });
    await publishGuildsEvent(runtime, 'guilds.server.updated', guildsServer(serverId, owner.user.id));
    await runtime.bus.jsm.streams.purge(runtime.bus.name(STREAMS.guilds.name), { keep: 7 });
    guilds.servers = [{ id: serverId, ownerId: owner.user.id }];
    guilds.members = [former.user.id, a, b].map((userId) => ({ serverId, userId }));

    consumers.push(...(await startGuildsReadModel({ ...runtime, config: auth.config })));
    await expect.poll(() => badgesOf(owner)).toContain('server_owner');
    expect(guilds.asked).toBeGreaterThanOrEqual(2);
    expect(await membersOf(serverId)).toBe(3);
    const pending = (durable: { stream: string; durable: string }) =>
      runtime.bus.jsm.consumers.info(runtime.bus.name(durable.stream), runtime.bus.name(durable.durable)).then(
        (info) => info.num_pending + info.num_ack_pending,
        () => -1,
      );
    for (const durable of [SERVERS_CONSUMER, MEMBERS_CONSUMER]) await expect.poll(() => pending(durable)).toBe(0);
    // Replaying the kept history on top would have handed the server to `former` and back: announced badge flips.
    expect(await badgesOf(former)).not.toContain('server_owner');
    expect((await outboxEvents(runtime, 'auth.user.updated')).filter((u) => u.id === former.user.id)).toEqual([]);

    // The events after it count on the backfilled set: c was not counted, so c leaving again changes nothing.
    await publishGuildsEvent(runtime, 'guilds.member.left', { serverId, userId: c, reason: 'left', by: c });
    await publishGuildsEvent(runtime, 'guilds.member.left', { serverId, userId: a, reason: 'left', by: a });
    await expect.poll(() => badgesOf(owner)).not.toContain('server_owner');
    expect(await membersOf(serverId)).toBe(2);
  });
});
