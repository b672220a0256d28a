import { Permission, toMask } from '@chat/contracts';
import { afterAll, describe, expect, it } from 'vitest';
import { newId, startGuilds, until } from './harness.ts';

const g = await startGuilds();
afterAll(() => g.close());

async function publicServer(owner: string, extra: Record<string, unknown> = {}) {
  return (await g.call(owner, 'POST', '/v1/servers', { name: 'Members', isPublic: true, ...extra })).body as { id: string };
}
async function join(serverId: string, ...users: string[]) {
  for (const u of users) expect((await g.call(u, 'POST', `/v1/servers/${serverId}/join`)).status).toBe(200);
}
async function role(owner: string, serverId: string, permissions: bigint, name = 'role') {
  const res = await g.call(owner, 'POST', `/v1/servers/${serverId}/roles`, { name, permissions: toMask(permissions) });
  expect(res.status).toBe(201);
  return res.body as { id: string; position: number };
}
async function give(owner: string, serverId: string, userId: string, roleId: string) {
  expect((await g.call(owner, 'PUT', `/v1/servers/${serverId}/members/${userId}/roles/${roleId}`)).status).toBe(204);
}
const isMember = async (serverId: string, userId: string) =>
  (await g.db.query('SELECT 1 FROM members WHERE server_id = $1 AND user_id = $2', [serverId, userId])).rowCount === 1;

describe('members', () => {
  it('pages members by user id with the read-model’s names', async () => {
    const owner = await g.knownUser('owner');
    const server = await publicServer(owner);
    const others = [newId(), newId(), newId()];
    await join(server.id, ...others);
    const all = [owner, ...others].sort();
    const first = await g.call(owner, 'GET', `/v1/servers/${server.id}/members?limit=2`);
    const second = await g.call(owner, 'GET', `/v1/servers/${server.id}/members?limit=2&after=${first.body[1].userId}`);
    expect([...first.body, ...second.body].map((m: { userId: string }) => m.userId)).toEqual(all);
    const ownerEntry = [...first.body, ...second.body].find((m: { userId: string }) => m.userId === owner);
    expect(ownerEntry).toMatchObject({
      serverId: server.id,
      nickname: null,
      roleIds: [],
      user: { id: owner, username: expect.stringMatching(/^owner_/) },
    });
    expect((await g.call(owner, 'GET', `/v1/servers/${server.id}/members?limit=0`)).status).toBe(400);
    expect((await g.call(newId(), 'GET', `/v1/servers/${server.id}/members`)).status).toBe(403);
  });

  it('changes my nickname, and another’s only with MANAGE_NICKNAMES from above', async () => {
    const [owner, a, b] = [newId(), newId(), newId()];
    const server = await publicServer(owner);
    await join(server.id, a, b);
    const mine = await g.call(a, 'PATCH', `/v1/servers/${server.id}/members/@me`, { nickname: 'Ace' });
    expect(mine.status).toBe(200);
    expect(mine.body.nickname).toBe('Ace');
    expect((await g.call(a, 'PATCH', `/v1/servers/${server.id}/members/${b}`, { nickname: 'Bee' })).status).toBe(403);
    expect((await g.call(a, 'PATCH', `/v1/servers/${server.id}/members/@me`, { nickname: 'x'.repeat(33) })).status).toBe(400);
    const byOwner = await g.call(owner, 'PATCH', `/v1/servers/${server.id}/members/${b}`, { nickname: 'Bee' });
    expect(byOwner.body).toMatchObject({ userId: b, nickname: 'Bee' });
  });

  it('kicks only with KICK_MEMBERS and only members below one’s highest role', async () => {
    const [owner, mod, peer, plain] = [newId(), newId(), newId(), newId()];
    const server = await publicServer(owner);
    await join(server.id, mod, peer, plain);
    const mods = await role(owner, server.id, Permission.KICK_MEMBERS, 'mods');
    await give(owner, server.id, mod, mods.id);
    await give(owner, server.id, peer, mods.id);

    expect((await g.call(plain, 'DELETE', `/v1/servers/${server.id}/members/${peer}`)).status).toBe(403);
    expect((await g.call(mod, 'DELETE', `/v1/servers/${server.id}/members/${peer}`)).status).toBe(403);
    expect((await g.call(mod, 'DELETE', `/v1/servers/${server.id}/members/${owner}`)).status).toBe(403);
    expect((await g.call(mod, 'DELETE', `/v1/servers/${server.id}/members/${newId()}`)).status).toBe(404);
    expect(await isMember(server.id, peer)).toBe(true);

    expect((await g.call(mod, 'DELETE', `/v1/servers/${server.id}/members/${plain}`)).status).toBe(204);
    expect(await isMember(server.id, plain)).toBe(false);
    expect((await g.outbox('guilds.member.left')).some((e) => e.data.userId === plain && e.data.reason === 'kicked')).toBe(true);
    expect((await g.call(owner, 'DELETE', `/v1/servers/${server.id}/members/${peer}`)).status).toBe(204);
  });

  it('lets a member leave but not the owner', async () => {
    const [owner, a] = [newId(), newId()];
    const server = await publicServer(owner);
    await join(server.id, a);
    expect((await g.call(a, 'DELETE', `/v1/servers/${server.id}/members/@me`)).status).toBe(204);
    expect(await isMember(server.id, a)).toBe(false);
    expect((await g.call(a, 'DELETE', `/v1/servers/${server.id}/members/@me`)).status).toBe(403);
    const ownerLeaves = await g.call(owner, 'DELETE', `/v1/servers/${server.id}/members/@me`);
    expect(ownerLeaves.status).toBe(400);
    expect(await isMember(server.id, owner)).toBe(true);
    expect(Number((await g.db.query('SELECT member_count FROM servers WHERE id = $1', [server.id])).rows[0].member_count)).toBe(1);
  });
});

describe('roles', () => {
  it('creates roles just above @everyone; nobody grants a bit they lack or touches a role at or above their own', async () => {
    const [owner, manager] = [newId(), newId()];
    const server = await publicServer(owner);
    await join(server.id, manager);
    const managers = await role(owner, server.id, Permission.MANAGE_ROLES | Permission.KICK_MEMBERS, 'managers');
    await give(owner, server.id, manager, managers.id);

    const low = await g.call(manager, 'POST', `/v1/servers/${server.id}/roles`, {
      name: 'low',
      permissions: toMask(Permission.KICK_MEMBERS),
    });
    expect(low.status).toBe(201);
    expect(low.body.position).toBe(1);
    const refreshed = (await g.call(owner, 'GET', `/v1/servers/${server.id}/roles`)).body;
    expect(refreshed.map((r: { name: string; position: number }) => [r.name, r.position])).toEqual([
      ['@everyone', 0],
      ['low', 1],
      ['managers', 2],
    ]);

    const grantBan = await g.call(manager, 'POST', `/v1/servers/${server.id}/roles`, {
      name: 'x',
      permissions: toMask(Permission.BAN_MEMBERS),
    });
    expect(grantBan.status).toBe(403);
    expect(
      (await g.call(manager, 'PATCH', `/v1/servers/${server.id}/roles/${low.body.id}`, { permissions: toMask(Permission.ADMINISTRATOR) }))
        .status,
    ).toBe(403);
    expect((await g.call(manager, 'PATCH', `/v1/servers/${server.id}/roles/${managers.id}`, { name: 'mine now' })).status).toBe(403);
    expect((await g.call(manager, 'DELETE', `/v1/servers/${server.id}/roles/${managers.id}`)).status).toBe(403);
    expect((await g.call(manager, 'PUT', `/v1/servers/${server.id}/members/${manager}/roles/${managers.id}`)).status).toBe(403);
    expect((await g.call(manager, 'PATCH', `/v1/servers/${server.id}/roles/${low.body.id}`, { position: 2 })).status).toBe(403);

    const renamed = await g.call(manager, 'PATCH', `/v1/servers/${server.id}/roles/${low.body.id}`, {
      name: 'helpers',
      color: 0xff0000,
      hoist: true,
    });
    expect(renamed.body).toMatchObject({ name: 'helpers', color: 0xff0000, hoist: true, permissions: toMask(Permission.KICK_MEMBERS) });
    expect((await g.call(owner, 'PATCH', `/v1/servers/${server.id}/roles/${low.body.id}`, { position: 2 })).body.position).toBe(2);
    expect((await g.call(owner, 'GET', `/v1/servers/${server.id}/roles`)).body.map((r: { name: string }) => r.name)).toEqual([
      '@everyone',
      'managers',
      'helpers',
    ]);
    expect((await g.call(owner, 'PATCH', `/v1/servers/${server.id}/roles/${low.body.id}`, { position: 9 })).status).toBe(400);
    expect((await g.call(owner, 'PATCH', `/v1/servers/${server.id}/roles/${low.body.id}`, { color: 0x1000000 })).status).toBe(400);
  });

  it('never moves a role above the actor’s own, even while another change lowers the actor’s role (issue 16)', async () => {
    const [owner, manager] = [newId(), newId()];
    const server = await publicServer(owner);
    await join(server.id, manager);
    // Bottom-up: low (1) < b (2) < a (3) < managers (4).
    const managers = await role(owner, server.id, Permission.MANAGE_ROLES, 'managers');
    await role(owner, server.id, 0n, 'a');
    await role(owner, server.id, 0n, 'b');
    const low = await role(owner, server.id, 0n, 'low');
    await give(owner, server.id, manager, managers.id);
    const positions = async () =>
      Object.fromEntries(
        (await g.db.query('SELECT name, position FROM roles WHERE server_id = $1 AND position > 0', [server.id])).rows.map((r) => [
          r.name,
          r.position,
        ]),
      );
    expect(await positions()).toEqual({ low: 1, b: 2, a: 3, managers: 4 });

    // The owner's concurrent change: managers drops to 2 in a transaction that holds the roles.
    const owners = await g.db.connect();
    try {
      await owners.query('BEGIN');
      await owners.query('SELECT 1 FROM roles WHERE server_id = $1 FOR UPDATE', [server.id]);
      await owners.query(
        `UPDATE roles SET position = CASE name WHEN 'managers' THEN 2 WHEN 'b' THEN 3 WHEN 'a' THEN 4 ELSE position END
         WHERE server_id = $1 AND position > 0`,
        [server.id],
      );
      const move = g.call(manager, 'PATCH', `/v1/servers/${server.id}/roles/${low.id}`, { position: 3 });
      await until(
        async () =>
          (await g.db.query("SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'")).rowCount! >
          0,
      );
      await owners.query('COMMIT');
      const res = await move;
      expect(res.status).toBe(403);
      expect(res.body).toEqual({ error: 'You can only move roles below your highest role' });
    } finally {
      owners.release();
    }
    expect(await positions()).toEqual({ low: 1, managers: 2, b: 3, a: 4 });
  });

  it('gives a role below one’s own only when it carries no bit the giver lacks, and takes it away regardless', async () => {
    const [owner, manager, member] = [newId(), newId(), newId()];
    const server = await publicServer(owner);
    await join(server.id, manager, member);
    // Each new role goes just above @everyone: admins and kickers end up below managers.
    const managers = await role(owner, server.id, Permission.MANAGE_ROLES | Permission.KICK_MEMBERS, 'managers');
    const kickers = await role(owner, server.id, Permission.KICK_MEMBERS, 'kickers');
    const admins = await role(owner, server.id, Permission.ADMINISTRATOR, 'admins');
    await give(owner, server.id, manager, managers.id);
    const mask = async (userId: string) =>
      BigInt((await g.call(userId, 'GET', `/v1/servers/${server.id}/members/@me/permissions`)).body.permissions);

    for (const target of [manager, member]) {
      const res = await g.call(manager, 'PUT', `/v1/servers/${server.id}/members/${target}/roles/${admins.id}`);
      expect(res).toMatchObject({ status: 403, body: { error: 'You cannot grant a permission you do not have' } });
      expect((await mask(target)) & Permission.ADMINISTRATOR).toBe(0n);
    }
    await give(manager, server.id, member, kickers.id);
    expect((await mask(member)) & Permission.KICK_MEMBERS).toBe(Permission.KICK_MEMBERS);
    // The owner gave it; a manager below it may still take it away.
    await give(owner, server.id, member, admins.id);
    expect((await g.call(manager, 'DELETE', `/v1/servers/${server.id}/members/${member}/roles/${admins.id}`)).status).toBe(204);
    expect((await mask(member)) & Permission.ADMINISTRATOR).toBe(0n);
  });

  it('keeps @everyone: not deletable, not renamable, not assignable', async () => {
    const owner = newId();
    const server = await publicServer(owner);
    expect((await g.call(owner, 'DELETE', `/v1/servers/${server.id}/roles/${server.id}`)).status).toBe(400);
    expect((await g.call(owner, 'PATCH', `/v1/servers/${server.id}/roles/${server.id}`, { name: 'all' })).status).toBe(400);
    expect((await g.call(owner, 'PUT', `/v1/servers/${server.id}/members/${owner}/roles/${server.id}`)).status).toBe(400);
    const edited = await g.call(owner, 'PATCH', `/v1/servers/${server.id}/roles/${server.id}`, {
      permissions: toMask(Permission.VIEW_CHANNEL),
    });
    expect(edited.body.permissions).toBe(toMask(Permission.VIEW_CHANNEL));
  });

  it('gives and takes roles, which changes the member’s mask; deleting a role takes it from everyone', async () => {
    const [owner, a] = [newId(), newId()];
    const server = await publicServer(owner);
    await join(server.id, a);
    const movers = await role(owner, server.id, Permission.MOVE_MEMBERS);
    const mask = async () => BigInt((await g.call(a, 'GET', `/v1/servers/${server.id}/members/@me/permissions`)).body.permissions);
    expect((await mask()) & Permission.MOVE_MEMBERS).toBe(0n);
    await give(owner, server.id, a, movers.id);
    expect((await mask()) & Permission.MOVE_MEMBERS).toBe(Permission.MOVE_MEMBERS);
    expect((await g.call(owner, 'DELETE', `/v1/servers/${server.id}/members/${a}/roles/${movers.id}`)).status).toBe(204);
    expect((await mask()) & Permission.MOVE_MEMBERS).toBe(0n);
    await give(owner, server.id, a, movers.id);
    expect((await g.call(owner, 'DELETE', `/v1/servers/${server.id}/roles/${movers.id}`)).status).toBe(204);
    expect((await mask()) & Permission.MOVE_MEMBERS).toBe(0n);
    expect((await g.call(owner, 'PUT', `/v1/servers/${server.id}/members/${newId()}/roles/${server.id}`)).status).toBe(400);
    expect((await g.call(owner, 'PUT', `/v1/servers/${server.id}/members/${a}/roles/${newId()}`)).status).toBe(404);
  });
});

describe('bans', () => {
  it('bans below one’s highest role, removes the member, lists every Ban field from the read-model', async () => {
    const owner = newId();
    const target = await g.knownUser('target');
    const server = await publicServer(owner);
    await join(server.id, target);
    const res = await g.call(owner, 'PUT', `/v1/servers/${server.id}/bans/${target}`, { reason: 'spam' });
    expect(res.status).toBe(200);
    expect(await isMember(server.id, target)).toBe(false);
    const list = await g.call(owner, 'GET', `/v1/servers/${server.id}/bans`);
    expect(list.body).toEqual([
      {
        serverId: server.id,
        userId: target,
        username: expect.stringMatching(/^target_/),
        displayName: expect.stringMatching(/^target /),
        avatarUrl: null,
        bannedBy: owner,
        reason: 'spam',
        createdAt: expect.any(String),
      },
    ]);
    expect((await g.outbox('guilds.member.banned')).some((e) => e.data.userId === target)).toBe(true);
    expect((await g.outbox('guilds.member.left')).some((e) => e.data.userId === target && e.data.reason === 'banned')).toBe(true);

    expect((await g.call(owner, 'DELETE', `/v1/servers/${server.id}/bans/${target}`)).status).toBe(204);
    expect((await g.call(owner, 'GET', `/v1/servers/${server.id}/bans`)).body).toEqual([]);
    expect((await g.call(owner, 'DELETE', `/v1/servers/${server.id}/bans/${target}`)).status).toBe(404);
    await join(server.id, target);
  });

  it('refuses without BAN_MEMBERS, on equals, on the owner, on oneself, and on users auth never told us of', async () => {
    const [owner, mod, peer] = [newId(), await g.knownUser('mod'), await g.knownUser('peer')];
    const server = await publicServer(owner);
    await join(server.id, mod, peer);
    expect((await g.call(peer, 'PUT', `/v1/servers/${server.id}/bans/${mod}`, {})).status).toBe(403);
    const mods = await role(owner, server.id, Permission.BAN_MEMBERS);
    await give(owner, server.id, mod, mods.id);
    await give(owner, server.id, peer, mods.id);
    expect((await g.call(mod, 'PUT', `/v1/servers/${server.id}/bans/${peer}`, {})).status).toBe(403);
    expect((await g.call(mod, 'PUT', `/v1/servers/${server.id}/bans/${owner}`, {})).status).toBe(403);
    expect((await g.call(mod, 'PUT', `/v1/servers/${server.id}/bans/${mod}`, {})).status).toBe(400);
    expect((await g.call(owner, 'PUT', `/v1/servers/${server.id}/bans/${newId()}`, {})).status).toBe(404);
    expect((await g.call(owner, 'PUT', `/v1/servers/${server.id}/bans/${peer}`, { reason: 'x'.repeat(513) })).status).toBe(400);
    expect((await g.call(peer, 'GET', `/v1/servers/${server.id}/bans`)).status).toBe(200);
    expect((await g.call(newId(), 'GET', `/v1/servers/${server.id}/bans`)).status).toBe(403);
    expect(Number((await g.db.query('SELECT count(*) n FROM bans WHERE server_id = $1', [server.id])).rows[0].n)).toBe(0);
  });
});

describe('invites', () => {
  it('creates a CSPRNG code, previews it without a token and joins a private server through it', async () => {
    const [owner, guest] = [newId(), newId()];
    const server = (await g.call(owner, 'POST', '/v1/servers', { name: 'Private', description: 'secret' })).body;
    const invite = await g.call(owner, 'POST', `/v1/servers/${server.id}/invites`, { maxUses: 2, maxAgeSeconds: 3600 });
    expect(invite.status).toBe(201);
    expect(invite.body).toMatchObject({ serverId: server.id, inviterId: owner, uses: 0, maxUses: 2, expiresAt: expect.any(String) });
    expect(invite.body.code).toMatch(/^[A-Za-z0-9]{8,}$/);

    const preview = await g.call(null, 'GET', `/v1/invites/${invite.body.code}/preview`);
    expect(preview.status).toBe(200);
    expect(preview.body).toEqual({
      code: invite.body.code,
      server: { id: server.id, name: 'Private', iconUrl: null, description: 'secret', memberCount: 1 },
      expiresAt: invite.body.expiresAt,
    });
    const accepted = await g.call(guest, 'POST', `/v1/invites/${invite.body.code}/accept`);
    expect(accepted.status).toBe(200);
    expect(accepted.body.id).toBe(server.id);
    expect(await isMember(server.id, guest)).toBe(true);
    expect((await g.call(guest, 'POST', `/v1/invites/${invite.body.code}/accept`)).status).toBe(409);
    expect((await g.call(owner, 'GET', `/v1/servers/${server.id}/invites`)).body[0].uses).toBe(1);
  });

  it('answers the same 404 for unknown, expired and used-up codes', async () => {
    const owner = newId();
    const server = await publicServer(owner);
    const once = (await g.call(owner, 'POST', `/v1/servers/${server.id}/invites`, { maxUses: 1 })).body;
    expect((await g.call(newId(), 'POST', `/v1/invites/${once.code}/accept`)).status).toBe(200);
    const expired = (await g.call(owner, 'POST', `/v1/servers/${server.id}/invites`, {})).body;
    await g.db.query("UPDATE invites SET expires_at = now() - interval '1 second' WHERE code = $1", [expired.code]);
    const answers = [];
    for (const code of [once.code, expired.code, 'NoSuchCode1']) {
      answers.push(await g.call(null, 'GET', `/v1/invites/${code}/preview`));
      answers.push(await g.call(newId(), 'POST', `/v1/invites/${code}/accept`));
    }
    for (const a of answers) expect({ status: a.status, body: a.body }).toEqual({ status: 404, body: { error: 'Invite not found' } });
    expect((await g.call(null, 'GET', '/v1/invites/a!/preview')).status).toBe(400);
  });

  it('needs CREATE_INSTANT_INVITE to create and the creator or MANAGE_SERVER to revoke; banned users cannot accept', async () => {
    const [owner, member] = [newId(), newId()];
    const banned = await g.knownUser('banned');
    const server = await publicServer(owner);
    await join(server.id, member);
    const byMember = await g.call(member, 'POST', `/v1/servers/${server.id}/invites`);
    expect(byMember.status).toBe(201);
    expect(byMember.body.expiresAt).not.toBeNull();
    const byOwner = (await g.call(owner, 'POST', `/v1/servers/${server.id}/invites`, { maxAgeSeconds: 0 })).body;
    expect(byOwner.expiresAt).toBeNull();
    expect((await g.call(member, 'DELETE', `/v1/invites/${byOwner.code}`)).status).toBe(403);
    expect((await g.call(newId(), 'DELETE', `/v1/invites/${byOwner.code}`)).status).toBe(404);
    expect((await g.call(member, 'DELETE', `/v1/invites/${byMember.body.code}`)).status).toBe(204);
    expect((await g.call(member, 'GET', `/v1/servers/${server.id}/invites`)).status).toBe(403);

    await g.call(owner, 'PUT', `/v1/servers/${server.id}/bans/${banned}`, {});
    expect((await g.call(banned, 'POST', `/v1/invites/${byOwner.code}/accept`)).status).toBe(403);
    expect(await isMember(server.id, banned)).toBe(false);
    expect((await g.call(owner, 'GET', `/v1/servers/${server.id}/invites`)).body[0].uses).toBe(0);
    await g.db.query('UPDATE roles SET permissions = 0 WHERE id = $1', [server.id]);
    expect((await g.call(member, 'POST', `/v1/servers/${server.id}/invites`)).status).toBe(403);
  });
});

describe('join requests', () => {
  it('takes one pending request per user, lets MANAGE_SERVER approve (member added) or reject', async () => {
    const [owner, a, b] = [newId(), newId(), newId()];
    const server = await publicServer(owner, { requireApproval: true });
    const request = await g.call(a, 'POST', `/v1/servers/${server.id}/join-requests`, { message: 'let me in' });
    expect(request.status).toBe(201);
    expect(request.body).toMatchObject({ serverId: server.id, userId: a, message: 'let me in', status: 'pending', reviewedBy: null });
    expect((await g.call(a, 'POST', `/v1/servers/${server.id}/join-requests`, {})).status).toBe(409);
    const other = (await g.call(b, 'POST', `/v1/servers/${server.id}/join-requests`)).body;

    expect((await g.call(a, 'GET', `/v1/servers/${server.id}/join-requests`)).status).toBe(403);
    const pending = await g.call(owner, 'GET', `/v1/servers/${server.id}/join-requests?status=pending`);
    expect(pending.body.map((r: { userId: string }) => r.userId)).toEqual([a, b]);
    expect((await g.call(owner, 'GET', `/v1/servers/${server.id}/join-requests?status=maybe`)).status).toBe(400);

    const approved = await g.call(owner, 'POST', `/v1/servers/${server.id}/join-requests/${request.body.id}/approve`);
    expect(approved.body).toMatchObject({ status: 'approved', reviewedBy: owner, reviewedAt: expect.any(String) });
    expect(await isMember(server.id, a)).toBe(true);
    expect((await g.call(owner, 'POST', `/v1/servers/${server.id}/join-requests/${request.body.id}/reject`)).status).toBe(409);
    const rejected = await g.call(owner, 'POST', `/v1/servers/${server.id}/join-requests/${other.id}/reject`);
    expect(rejected.body.status).toBe('rejected');
    expect(await isMember(server.id, b)).toBe(false);
    const mine = await g.call(b, 'GET', '/v1/join-requests/@me');
    expect(mine.body).toEqual([expect.objectContaining({ id: other.id, status: 'rejected' })]);
    expect((await g.call(a, 'POST', `/v1/servers/${server.id}/join-requests`)).status).toBe(409);
    expect((await g.call(owner, 'POST', `/v1/servers/${server.id}/join-requests/${newId()}/approve`)).status).toBe(404);
  });

  it('approves the pending request of a user who joins by invite: approving it after they left is a 409, and they may ask again', async () => {
    const [owner, a] = [newId(), newId()];
    const server = await publicServer(owner, { requireApproval: true });
    const request = (await g.call(a, 'POST', `/v1/servers/${server.id}/join-requests`, { message: 'let me in' })).body;
    const invite = (await g.call(owner, 'POST', `/v1/servers/${server.id}/invites`, {})).body;
    expect((await g.call(a, 'POST', `/v1/invites/${invite.code}/accept`)).status).toBe(200);

    const settled = { id: request.id, status: 'approved', reviewedBy: null, reviewedAt: expect.any(String) };
    expect((await g.call(owner, 'GET', `/v1/servers/${server.id}/join-requests?status=pending`)).body).toEqual([]);
    expect((await g.call(owner, 'GET', `/v1/servers/${server.id}/join-requests?status=approved`)).body).toEqual([
      expect.objectContaining(settled),
    ]);
    expect((await g.outbox('guilds.joinrequest.reviewed')).filter((e) => e.data.id === request.id)).toEqual([
      expect.objectContaining({ data: expect.objectContaining(settled) }),
    ]);

    expect((await g.call(a, 'DELETE', `/v1/servers/${server.id}/members/@me`)).status).toBe(204);
    const stale = await g.call(owner, 'POST', `/v1/servers/${server.id}/join-requests/${request.id}/approve`);
    expect(stale).toMatchObject({ status: 409, body: { error: 'This join request was already approved' } });
    expect((await g.call(owner, 'POST', `/v1/servers/${server.id}/join-requests/${request.id}/reject`)).status).toBe(409);
    expect(await isMember(server.id, a)).toBe(false);
    const again = await g.call(a, 'POST', `/v1/servers/${server.id}/join-requests`, {});
    expect(again).toMatchObject({ status: 201, body: { status: 'pending' } });
  });

  it('tells of an approval once, by its approver', async () => {
    const [owner, a] = [newId(), newId()];
    const server = await publicServer(owner, { requireApproval: true });
    const request = (await g.call(a, 'POST', `/v1/servers/${server.id}/join-requests`, {})).body;
    expect((await g.call(owner, 'POST', `/v1/servers/${server.id}/join-requests/${request.id}/approve`)).status).toBe(200);
    expect(await isMember(server.id, a)).toBe(true);
    expect((await g.outbox('guilds.joinrequest.reviewed')).filter((e) => e.data.id === request.id)).toEqual([
      expect.objectContaining({ data: expect.objectContaining({ status: 'approved', reviewedBy: owner }) }),
    ]);
  });

  it('refuses a message with control or bidi-override characters, and takes one over several lines', async () => {
    const owner = newId();
    const server = await publicServer(owner, { requireApproval: true });
    for (const message of ['hello \u202Eevil', 'ring\u0007', 'a\u2028b']) {
      const res = await g.call(newId(), 'POST', `/v1/servers/${server.id}/join-requests`, { message });
      expect({ message, status: res.status, body: res.body }).toEqual({ message, status: 400, body: { error: expect.any(String) } });
    }
    expect(Number((await g.db.query('SELECT count(*) n FROM join_requests WHERE server_id = $1', [server.id])).rows[0].n)).toBe(0);
    const lines = await g.call(newId(), 'POST', `/v1/servers/${server.id}/join-requests`, { message: 'line one\n\tline two' });
    expect(lines).toMatchObject({ status: 201, body: { message: 'line one\n\tline two' } });
  });

  it('refuses banned users, servers without approval and private servers', async () => {
    const owner = newId();
    const banned = await g.knownUser('banned');
    const approval = await publicServer(owner, { requireApproval: true });
    const open = await publicServer(owner);
    const closed = (await g.call(owner, 'POST', '/v1/servers', { name: 'Closed', requireApproval: true })).body;
    await g.call(owner, 'PUT', `/v1/servers/${approval.id}/bans/${banned}`, {});
    expect((await g.call(banned, 'POST', `/v1/servers/${approval.id}/join-requests`)).status).toBe(403);
    expect((await g.call(newId(), 'POST', `/v1/servers/${open.id}/join-requests`)).status).toBe(400);
    expect((await g.call(newId(), 'POST', `/v1/servers/${closed.id}/join-requests`)).status).toBe(404);
    expect((await g.call(newId(), 'POST', `/v1/servers/${approval.id}/join-requests`, { message: 'x'.repeat(501) })).status).toBe(400);
    expect(
      Number(
        (await g.db.query('SELECT count(*) n FROM join_requests WHERE server_id = ANY($1)', [[approval.id, open.id, closed.id]])).rows[0].n,
      ),
    ).toBe(0);
  });
});
