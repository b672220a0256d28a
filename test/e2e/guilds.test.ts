import { readFileSync } from 'node:fs';
import { Permission } from '@chat/contracts';
import { describe, expect, it } from 'vitest';
import { api, newUser } from './helpers.ts';

/** Servers, membership, invites and bans through the gateway, with users registered at auth. */

async function eventually<T>(attempt: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await attempt();
    if (done(value) || Date.now() > deadline) return value;
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('guilds through the gateway', () => {
  it('creates a server, lets another user join once, and answers the join statuses', async () => {
    const [owner, guest] = [await newUser('owner'), await newUser('guest')];
    const created = await api('POST', '/v1/servers', { user: owner, body: { name: 'E2E guild', isPublic: true, tags: ['e2e'] } });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ name: 'E2E guild', ownerId: owner.id, isPublic: true });
    const id = created.body.id as string;

    const joined = await api('POST', `/v1/servers/${id}/join`, { user: guest });
    expect(joined.status).toBe(200);
    expect(joined.body).toEqual(created.body);
    expect((await api('POST', `/v1/servers/${id}/join`, { user: guest })).status).toBe(409);
    expect((await api('POST', `/v1/servers/${id}/join`)).status).toBe(401);
    expect((await api('POST', '/v1/servers/nope/join', { user: guest })).status).toBe(400);
    expect((await api('POST', `/v1/servers/${crypto.randomUUID()}/join`, { user: guest })).status).toBe(404);

    const channels = await api('GET', `/v1/servers/${id}/channels`, { user: guest });
    expect(channels.status).toBe(200);
    expect(channels.body.map((c: { channelType: string }) => c.channelType)).toEqual(['text', 'voice']);
    const mask = await api('GET', `/v1/servers/${id}/members/@me/permissions`, { user: guest });
    expect(BigInt(mask.body.permissions) & Permission.VIEW_CHANNEL).toBe(Permission.VIEW_CHANNEL);
    expect(BigInt(mask.body.permissions) & Permission.ADMINISTRATOR).toBe(0n);
    expect((await api('GET', `/v1/servers/${id}/members/@me/permissions`, { user: owner })).body.permissions).toBe(2 ** 32 - 1);
  });

  it('previews an invite without a token and joins a private server through it', async () => {
    const [owner, guest] = [await newUser('owner'), await newUser('guest')];
    const server = (await api('POST', '/v1/servers', { user: owner, body: { name: 'Private e2e' } })).body;
    expect((await api('GET', `/v1/servers/${server.id}`, { user: guest })).status).toBe(404);
    const invite = (await api('POST', `/v1/servers/${server.id}/invites`, { user: owner, body: { maxUses: 1 } })).body;
    const preview = await api('GET', `/v1/invites/${invite.code}/preview`);
    expect(preview.status).toBe(200);
    expect(preview.body.server).toMatchObject({ id: server.id, name: 'Private e2e', memberCount: 1 });
    expect((await api('POST', `/v1/invites/${invite.code}/accept`, { user: guest })).status).toBe(200);
    expect((await api('GET', `/v1/servers/${server.id}`, { user: guest })).status).toBe(200);
    expect((await api('GET', `/v1/invites/${invite.code}/preview`)).status).toBe(404);
  });

  it('shows auth’s username on a ban (read-model fed by auth’s events) and keeps the banned user out', async () => {
    const [owner, troll] = [await newUser('owner'), await newUser('troll')];
    const server = (await api('POST', '/v1/servers', { user: owner, body: { name: 'Strict e2e', isPublic: true } })).body;
    expect((await api('POST', `/v1/servers/${server.id}/join`, { user: troll })).status).toBe(200);
    // auth.user.registered travels through auth's outbox and JetStream; the ban waits for it.
    const ban = await eventually(
      () => api('PUT', `/v1/servers/${server.id}/bans/${troll.id}`, { user: owner, body: { reason: 'e2e' } }),
      (res) => res.status !== 404,
    );
    expect(ban.status).toBe(200);
    const bans = await api('GET', `/v1/servers/${server.id}/bans`, { user: owner });
    expect(bans.body).toEqual([expect.objectContaining({ userId: troll.id, username: troll.username, bannedBy: owner.id, reason: 'e2e' })]);
    const rejoin = await api('POST', `/v1/servers/${server.id}/join`, { user: troll });
    expect(rejoin.status).toBe(400);
    expect(rejoin.body.error).toMatch(/banned/);
  });
});

describe('Discord templates through the gateway', () => {
  it('imports a template and exports the server in the same format', async () => {
    const owner = await newUser('tpl');
    const template = JSON.parse(
      readFileSync(new URL('../../services/guilds/test/fixtures/templates/gaming.json', import.meta.url), 'utf8'),
    );
    const created = await api('POST', '/v1/servers/import', { user: owner, body: { template } });
    expect(created.status).toBe(201);
    expect(created.body.server).toMatchObject({ name: 'Gaming Night', ownerId: owner.id });
    expect(created.body.report.find((r: { sourceId: string; kind: string }) => r.kind === 'channel' && r.sourceId === '8')).toMatchObject({
      outcome: 'changed',
    });
    const exported = await api('GET', `/v1/servers/${created.body.server.id}/template`, { user: owner });
    expect(exported.status).toBe(200);
    expect(exported.body.serialized_source_guild.channels.map((c: { name: string }) => c.name)).toEqual([
      'Text',
      'Voice',
      'lfg',
      'clips',
      'Squad 1',
      'Squad 2',
      'Event Stage',
      'AFK',
    ]);
    const refused = await api('POST', '/v1/servers/import', { user: owner, body: { template: 'gAmInG3' } });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatch(/paste the JSON/);
  });
});
