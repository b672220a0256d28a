import { GUILDS_SUBJECTS } from '@chat/contracts';
import { afterAll, describe, expect, it } from 'vitest';
import { newId, startGuilds } from './harness.ts';

/**
 * A member's join and change events carry the member as REST lists them, and a ban event the ban
 * as REST lists it: the socket's SERVER_MEMBER_ADD, SERVER_MEMBER_UPDATE and SERVER_BAN_ADD show
 * what a client would otherwise fetch (the gateway adds what others see of the member now).
 */

const g = await startGuilds();
afterAll(() => g.close());

const eventAbout = async (subject: string, serverId: string, userId: string) =>
  (await g.outbox(subject)).map((e) => e.data).filter((d) => d.serverId === serverId && d.userId === userId);

/** The member as GET /v1/servers/{id}/members lists them, less what others see of them now. */
async function listed(viewer: string, serverId: string, userId: string) {
  const page = await g.call(viewer, 'GET', `/v1/servers/${serverId}/members?limit=100`);
  expect(page.status).toBe(200);
  const {
    status: _status,
    activity: _activity,
    ...member
  } = (page.body as { userId: string }[]).find((m) => m.userId === userId) as Record<string, unknown>;
  return member;
}

describe('member events', () => {
  it('tell a join, a nickname, a role and a ban with the records REST lists', async () => {
    const [owner, member] = [newId(), await g.knownUser('evmember')];
    const server = (await g.call(owner, 'POST', '/v1/servers', { name: 'Events', isPublic: true })).body as { id: string };
    expect((await g.call(member, 'POST', `/v1/servers/${server.id}/join`)).status).toBe(200);
    const joined = await listed(owner, server.id, member);
    expect(joined.user).toMatchObject({ id: member, username: expect.any(String) });
    expect(await eventAbout(GUILDS_SUBJECTS.memberJoined, server.id, member)).toEqual([joined]);

    expect((await g.call(member, 'PATCH', `/v1/servers/${server.id}/members/@me`, { nickname: 'Nick' })).status).toBe(200);
    const role = (await g.call(owner, 'POST', `/v1/servers/${server.id}/roles`, { name: 'crew' })).body as { id: string };
    expect((await g.call(owner, 'PUT', `/v1/servers/${server.id}/members/${member}/roles/${role.id}`)).status).toBe(204);
    const changed = await listed(owner, server.id, member);
    expect(changed).toMatchObject({ nickname: 'Nick', roleIds: [role.id] });
    const updates = await eventAbout(GUILDS_SUBJECTS.memberUpdated, server.id, member);
    expect(updates).toEqual([{ ...joined, nickname: 'Nick' }, changed]);

    const ban = await g.call(owner, 'PUT', `/v1/servers/${server.id}/bans/${member}`, { reason: 'spam' });
    expect(ban.status).toBe(200);
    expect(await eventAbout(GUILDS_SUBJECTS.memberBanned, server.id, member)).toEqual([ban.body]);
    const bans = await g.call(owner, 'GET', `/v1/servers/${server.id}/bans`);
    expect(bans.body).toEqual([ban.body]);
    expect(ban.body).toMatchObject({ username: expect.any(String), displayName: expect.any(String), reason: 'spam' });
  });
});
