import { readFileSync } from 'node:fs';
import { Permission } from '@chat/contracts';
import { lastAttempt } from '@chat/testkit';
import { describe, expect, it } from 'vitest';
import { attempt, failure, newClientUser, recordingClient } from './helpers.ts';

/** Servers, membership, invites, bans and discovery through the gateway, with users registered at auth. */

describe('guilds through the gateway', () => {
  it('creates a server, lets another user join once, and answers the join statuses', async () => {
    const [owner, guest] = [await newClientUser('owner'), await newClientUser('guest')];
    const created = await owner.client.servers.createServer({ body: { name: 'E2E guild', isPublic: true, tags: ['e2e'] } });
    expect(owner.status()).toBe(201);
    expect(created).toMatchObject({ name: 'E2E guild', ownerId: owner.id, isPublic: true });
    const id = created.id;

    const joined = await guest.client.servers.joinServer({ params: { serverId: id } });
    expect(guest.status()).toBe(200);
    expect(joined).toEqual(created);
    expect(await failure(guest.client.servers.joinServer({ params: { serverId: id } }))).toMatchObject({ status: 409 });
    expect(await failure(recordingClient().client.servers.joinServer({ params: { serverId: id } }))).toMatchObject({ status: 401 });
    expect(await failure(guest.client.servers.joinServer({ params: { serverId: 'nope' } }))).toMatchObject({ status: 400 });
    expect(await failure(guest.client.servers.joinServer({ params: { serverId: crypto.randomUUID() } }))).toMatchObject({ status: 404 });

    const channels = await guest.client.servers.listChannels({ params: { serverId: id } });
    expect(guest.status()).toBe(200);
    expect(channels.map((c) => c.channelType)).toEqual(['text', 'voice']);
    const mask = await guest.client.servers.myServerPermissions({ params: { serverId: id } });
    expect(BigInt(mask.permissions) & Permission.VIEW_CHANNEL).toBe(Permission.VIEW_CHANNEL);
    expect(BigInt(mask.permissions) & Permission.ADMINISTRATOR).toBe(0n);
    expect((await owner.client.servers.myServerPermissions({ params: { serverId: id } })).permissions).toBe(2 ** 32 - 1);
  });

  it('previews an invite without a token and joins a private server through it', async () => {
    const [owner, guest] = [await newClientUser('owner'), await newClientUser('guest')];
    const anonymous = recordingClient();
    const server = await owner.client.servers.createServer({ body: { name: 'Private e2e' } });
    expect(await failure(guest.client.servers.getServer({ params: { serverId: server.id } }))).toMatchObject({ status: 404 });
    const invite = await owner.client.servers.createInvite({ params: { serverId: server.id }, body: { maxUses: 1 } });
    const preview = await anonymous.client.servers.previewInvite({ params: { code: invite.code } });
    expect(anonymous.status()).toBe(200);
    expect(preview.server).toMatchObject({ id: server.id, name: 'Private e2e', memberCount: 1 });
    await guest.client.servers.acceptInvite({ params: { code: invite.code } });
    expect(guest.status()).toBe(200);
    await guest.client.servers.getServer({ params: { serverId: server.id } });
    expect(guest.status()).toBe(200);
    expect(await failure(anonymous.client.servers.previewInvite({ params: { code: invite.code } }))).toMatchObject({ status: 404 });
  });

  it('shows auth’s username on a ban (read-model fed by auth’s events) and keeps the banned user out', async () => {
    const [owner, troll] = [await newClientUser('owner'), await newClientUser('troll')];
    const server = await owner.client.servers.createServer({ body: { name: 'Strict e2e', isPublic: true } });
    await troll.client.servers.joinServer({ params: { serverId: server.id } });
    expect(troll.status()).toBe(200);
    // auth.user.registered travels through auth's outbox and JetStream; the ban waits for it.
    const ban = await lastAttempt(
      () => attempt(owner, (c) => c.servers.banMember({ params: { serverId: server.id, userId: troll.id }, body: { reason: 'e2e' } })),
      (res) => res.status !== 404,
    );
    expect(ban.status).toBe(200);
    expect(ban.value).toMatchObject({ userId: troll.id, reason: 'e2e' });
    const bans = await owner.client.servers.listBans({ params: { serverId: server.id } });
    expect(bans).toEqual([expect.objectContaining({ userId: troll.id, username: troll.username, bannedBy: owner.id, reason: 'e2e' })]);
    const rejoin = await failure(troll.client.servers.joinServer({ params: { serverId: server.id } }));
    expect(rejoin.status).toBe(400);
    expect(rejoin.body).toEqual({ error: expect.stringMatching(/banned/) });
  });
});

describe('server discovery through the gateway', () => {
  it('lists a server only while it is public, with its member count after joins, a leave, a kick and a ban', async () => {
    const [owner, a, b, c] = await Promise.all([newClientUser('owner'), newClientUser('a'), newClientUser('b'), newClientUser('c')]);
    const tag = `t${crypto.randomUUID().slice(0, 8)}`;
    const servers = owner.client.servers;
    const unlisted = await servers.createServer({ body: { name: `${tag} private`, tags: [tag] } });
    const listed = await servers.createServer({ body: { name: `${tag} public`, isPublic: true, tags: [tag] } });
    const discovered = async () => (await a.client.servers.discoverServers({ query: { tag } })).map((s) => [s.id, s.memberCount]);
    expect(await discovered()).toEqual([[listed.id, 1]]);
    for (const user of [a, b, c]) await user.client.servers.joinServer({ params: { serverId: listed.id } });
    expect(await discovered()).toEqual([[listed.id, 4]]);

    await a.client.servers.leaveServer({ params: { serverId: listed.id } });
    await servers.kickMember({ params: { serverId: listed.id, userId: b.id } });
    // The ban waits for auth's event about the user to reach guilds.
    const ban = await lastAttempt(
      () => attempt(owner, (client) => client.servers.banMember({ params: { serverId: listed.id, userId: c.id }, body: {} })),
      (res) => res.status !== 404,
    );
    expect(ban.status).toBe(200);
    expect(await discovered()).toEqual([[listed.id, 1]]);

    await servers.updateServer({ params: { serverId: listed.id }, body: { isPublic: false } });
    expect(await discovered()).toEqual([]);
    await servers.updateServer({ params: { serverId: unlisted.id }, body: { isPublic: true } });
    expect(await discovered()).toEqual([[unlisted.id, 1]]);
  });
});

describe('Discord templates through the gateway', () => {
  it('imports a template and exports the server in the same format', async () => {
    const owner = await newClientUser('tpl');
    const template = JSON.parse(
      readFileSync(new URL('../../services/guilds/test/fixtures/templates/gaming.json', import.meta.url), 'utf8'),
    );
    const created = await owner.client.servers.importTemplate({ body: { template } });
    expect(owner.status()).toBe(201);
    expect(created.server).toMatchObject({ name: 'Gaming Night', ownerId: owner.id });
    expect(created.report.find((r) => r.kind === 'channel' && r.sourceId === '8')).toMatchObject({ outcome: 'changed' });
    const exported = await owner.client.servers.exportTemplate({ params: { serverId: created.server.id } });
    expect(owner.status()).toBe(200);
    expect(exported.serialized_source_guild.channels.map((c) => c.name)).toEqual([
      'Text',
      'Voice',
      'lfg',
      'clips',
      'Squad 1',
      'Squad 2',
      'Event Stage',
      'AFK',
    ]);
    // A template's code pasted instead of its JSON: what the type forbids, the server refuses too.
    const refused = await failure(owner.client.servers.importTemplate({ body: { template: 'gAmInG3' as never } }));
    expect(refused.status).toBe(400);
    expect(refused.body).toEqual({ error: expect.stringMatching(/paste the JSON/) });
  });
});
