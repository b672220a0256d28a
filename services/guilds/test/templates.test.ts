import { readFileSync } from 'node:fs';
import { MANAGE_SERVER, Permission, toMask } from '@chat/contracts';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { newId, startGuilds } from './harness.ts';

const g = await startGuilds();
afterAll(() => g.close());

const fixture = (name: string) => JSON.parse(readFileSync(new URL(`./fixtures/templates/${name}.json`, import.meta.url), 'utf8'));

async function importAs(owner: string, template: unknown) {
  return g.call(owner, 'POST', '/v1/servers/import', { template });
}

async function imported(owner: string, template: unknown) {
  const res = await importAs(owner, template);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body as { server: Record<string, unknown> & { id: string }; report: Record<string, unknown>[] };
}

const get = async (owner: string, url: string) => (await g.call(owner, 'GET', url)).body;
const reportOf = (report: Record<string, unknown>[], kind: string, sourceId: string) =>
  report.find((r) => r.kind === kind && r.sourceId === sourceId);
const serverCount = async () => Number((await g.db.query('SELECT count(*) AS n FROM servers')).rows[0].n);

describe('POST /v1/servers/import with real-world-shaped templates', () => {
  it('imports the community template: roles, categories, channels, overrides and settings, field by field', async () => {
    const owner = newId();
    const { server, report } = await imported(owner, fixture('community'));
    expect(server).toMatchObject({ name: 'Community Hub', description: 'Talk about anything', ownerId: owner, isPublic: false });

    const roles = await get(owner, `/v1/servers/${server.id}/roles`);
    expect(roles.map((r: { name: string; position: number }) => [r.position, r.name])).toEqual([
      [0, '@everyone'],
      [1, 'Member'],
      [2, 'Moderator'],
      [3, 'Admin'],
    ]);
    const byName = Object.fromEntries(roles.map((r: { name: string }) => [r.name, r]));
    expect(byName['@everyone'].permissions).toBe(104324161);
    expect(byName.Admin).toMatchObject({ permissions: toMask(Permission.ADMINISTRATOR), color: 0xe74c3c, hoist: true });
    // 1177110454278 carries bits 33, 36 and 40 (Discord's events, threads, timeout), which this platform lacks.
    expect(byName.Moderator.permissions).toBe(Number(1177110454278n & ((1n << 32n) - 1n)));
    expect(reportOf(report, 'role', '2')).toMatchObject({
      outcome: 'changed',
      id: byName.Moderator.id,
      note: expect.stringContaining('33, 36, 40'),
    });

    const categories = await get(owner, `/v1/servers/${server.id}/categories`);
    expect(categories.map((c: { name: string; position: number }) => [c.position, c.name])).toEqual([
      [0, 'Information'],
      [1, 'Community'],
      [2, 'Voice'],
    ]);
    const channels = await get(owner, `/v1/servers/${server.id}/channels`);
    const info = categories[0].id;
    const chan = (name: string) => channels.find((c: { name: string }) => c.name === name);
    expect(channels.map((c: { name: string }) => c.name)).toEqual([
      'rules',
      'announcements',
      'mod-log',
      'general',
      'off-topic',
      'Lounge',
      'AFK',
    ]);
    expect(chan('rules')).toMatchObject({ categoryId: info, channelType: 'text', topic: 'Read these first', position: 0 });
    expect(chan('announcements')).toMatchObject({ categoryId: info, channelType: 'text', position: 1 });
    expect(chan('general')).toMatchObject({ categoryId: categories[1].id, slowmodeSeconds: 5, isNsfw: false });
    expect(chan('off-topic')).toMatchObject({ isNsfw: true });
    expect(chan('Lounge')).toMatchObject({ channelType: 'voice', userLimit: 10, categoryId: categories[2].id });
    expect(reportOf(report, 'channel', '3')).toMatchObject({ outcome: 'changed', note: 'an announcement channel became a text channel' });

    const overrides = await get(owner, `/v1/channels/${chan('announcements').id}/permissions`);
    expect(
      overrides.map((o: { roleId: string; allowBits: number; denyBits: number }) => [o.roleId, o.allowBits, o.denyBits]).sort(),
    ).toEqual(
      [
        [server.id, 0, toMask(Permission.SEND_MESSAGES)],
        [byName.Moderator.id, toMask(Permission.SEND_MESSAGES), 0],
      ].sort(),
    );
    expect(reportOf(report, 'override', '10:1080000000000000001')).toMatchObject({
      outcome: 'dropped',
      note: 'member overrides name people of the source server',
    });
    expect(server).toMatchObject({ afkChannelId: chan('AFK').id, entranceChannelId: chan('general').id });
  });

  it('imports the study template: a forum becomes a text channel, an odd AFK timeout is rounded', async () => {
    const owner = newId();
    const { server, report } = await imported(owner, fixture('study'));
    const channels = await get(owner, `/v1/servers/${server.id}/channels`);
    const questions = channels.find((c: { name: string }) => c.name === 'questions');
    expect(questions).toMatchObject({ channelType: 'text', slowmodeSeconds: 60, topic: 'Ask one question per post' });
    expect(reportOf(report, 'channel', '5')).toMatchObject({ outcome: 'changed', note: 'a forum channel became a text channel' });
    expect(
      channels.filter((c: { channelType: string }) => c.channelType === 'voice').map((c: { userLimit: number }) => c.userLimit),
    ).toEqual([4, 4, 0]);
    expect(channels[0]).toMatchObject({ name: 'welcome', categoryId: null });
    expect(server.entranceChannelId).toBe(channels[0].id);
    expect(reportOf(report, 'setting', 'afk_timeout')).toMatchObject({ outcome: 'changed', note: '600 s became 300 s' });
  });

  it('imports the gaming template: stage to voice, thread dropped, category overrides dropped, unknown bits dropped', async () => {
    const owner = newId();
    const { server, report } = await imported(owner, fixture('gaming'));
    const channels = await get(owner, `/v1/servers/${server.id}/channels`);
    expect(channels.map((c: { name: string; channelType: string }) => `${c.name}/${c.channelType}`)).toEqual([
      'lfg/text',
      'clips/text',
      'Squad 1/voice',
      'Squad 2/voice',
      'Event Stage/voice',
      'AFK/voice',
    ]);
    expect(reportOf(report, 'channel', '8')).toMatchObject({ outcome: 'changed', note: 'a stage channel became a voice channel' });
    expect(reportOf(report, 'channel', '4')).toMatchObject({
      outcome: 'dropped',
      id: null,
      note: 'channel type 11 has no counterpart here',
    });
    expect(reportOf(report, 'override', '1:0')).toMatchObject({ outcome: 'dropped' });
    expect(reportOf(report, 'role', '2')).toMatchObject({ outcome: 'changed', note: expect.stringContaining('33') });
    expect(report.filter((r) => r.outcome !== 'dropped').every((r) => typeof r.id === 'string' || r.kind === 'setting')).toBe(true);
  });
});

describe('POST /v1/servers/import refuses what it cannot import whole, creating nothing', () => {
  const base = () => fixture('community');
  /** The community template with one change made by `change`. */
  const changed = (change: (guild: ReturnType<typeof base>['serialized_source_guild']) => void) => () => {
    const t = base();
    change(t.serialized_source_guild);
    return t;
  };
  const cases: [string, (t: ReturnType<typeof base>) => unknown, RegExp][] = [
    ['a template code instead of the object', () => 'hgM48av5Q69A', /paste the JSON/],
    ['a template link', () => 'https://discord.new/hgM48av5Q69A', /paste the JSON/],
    ['no serialized_source_guild', (t) => ({ ...t, serialized_source_guild: undefined }), /serialized_source_guild/],
    [
      'a permission string that is not a number',
      changed((g) => {
        g.roles[1].permissions = 'lots';
      }),
      /roles\.1\.permissions/,
    ],
    [
      'more than 250 roles',
      changed((g) => {
        g.roles = Array.from({ length: 251 }, (_, i) => ({ id: i, name: `r${i}`, permissions: '0' }));
      }),
      /250 roles/,
    ],
    [
      'more than 500 channels',
      changed((g) => {
        g.channels = Array.from({ length: 501 }, (_, i) => ({ id: i + 1, type: 0, name: `c${i}` }));
      }),
      /500 channels/,
    ],
    [
      'a parent that is not a category',
      changed((g) => {
        g.channels[5].parent_id = 5;
      }),
      /channels\.5\.parent_id: must name a category/,
    ],
    [
      'a category with a parent (a cycle)',
      changed((g) => {
        g.channels[0].parent_id = 4;
      }),
      /a category cannot have a parent/,
    ],
    [
      'the same channel id twice',
      changed((g) => {
        g.channels[1].id = 3;
      }),
      /appears twice/,
    ],
    [
      'two overwrites of the same role in one channel',
      changed((g) => {
        g.channels[2].permission_overwrites.push({ id: 2, type: 0, allow: '0', deny: '1024' });
      }),
      /channels\.2\.permission_overwrites: id 2 appears twice/,
    ],
    [
      'a role name with a bidi override (as POST roles)',
      changed((g) => {
        g.roles[1].name = 'adm\u202Enim';
      }),
      /roles\.1\.name: .*bidi-override/,
    ],
    [
      'a channel name with control characters (as POST channels)',
      changed((g) => {
        g.channels[4].name = 'gen\u0007eral\u001b[31m';
      }),
      /channels\.4\.name: .*control/,
    ],
    [
      'a category name with a line break (as POST categories)',
      changed((g) => {
        g.channels[0].name = 'Info\nFake system line';
      }),
      /channels\.0\.name: .*line-break/,
    ],
    [
      'a server name of zero-width characters only (as POST servers)',
      changed((g) => {
        g.name = '\u200B\u200B\u200B';
      }),
      /serialized_source_guild\.name: must show at least one visible character/,
    ],
  ];
  it.each(cases)('%s', async (_name, mutate, message) => {
    const before = await serverCount();
    const res = await importAs(newId(), mutate(base()));
    expect(res.status).toBe(400);
    expect(res.body.error).toMatch(message);
    expect(await serverCount()).toBe(before);
  });
});

describe('POST /v1/servers/import keeps what a template may hold', () => {
  it('takes names with emoji and box-drawing characters, as real templates have them', async () => {
    const t = fixture('community');
    t.serialized_source_guild.roles[1].name = '🌟 Member';
    t.serialized_source_guild.channels[0].name = '━━ 📌 Information ━━';
    t.serialized_source_guild.channels[4].name = '┃💬・general';
    const { server } = await imported(newId(), t);
    const owner = server.ownerId as string;
    expect((await get(owner, `/v1/servers/${server.id}/roles`)).map((r: { name: string }) => r.name)).toContain('🌟 Member');
    expect((await get(owner, `/v1/servers/${server.id}/categories`))[0].name).toBe('━━ 📌 Information ━━');
    expect((await get(owner, `/v1/servers/${server.id}/channels`)).map((c: { name: string }) => c.name)).toContain('┃💬・general');
  });

  it('keeps an allowed afk_timeout, and the export gives the server its own', async () => {
    const owner = newId();
    const t = fixture('community');
    t.serialized_source_guild.afk_timeout = 3600;
    const { server, report } = await imported(owner, t);
    expect(server.afkTimeoutSeconds).toBe(3600);
    expect((await get(owner, `/v1/servers/${server.id}`)).afkTimeoutSeconds).toBe(3600);
    expect(reportOf(report, 'setting', 'afk_timeout')).toBeUndefined();
    expect((await g.call(owner, 'PATCH', `/v1/servers/${server.id}`, { afkTimeoutSeconds: 900 })).status).toBe(200);
    expect((await get(owner, `/v1/servers/${server.id}/template`)).serialized_source_guild.afk_timeout).toBe(900);
  });
});

describe('GET /v1/servers/{id}/template', () => {
  it('needs MANAGE_SERVER: a plain member is refused, an outsider is told nothing exists', async () => {
    const owner = newId();
    const { server } = await imported(owner, fixture('study'));
    expect((await g.call(newId(), 'GET', `/v1/servers/${server.id}/template`)).status).toBe(404);
    const member = newId();
    await g.db.query('INSERT INTO members (server_id, user_id) VALUES ($1, $2)', [server.id, member]);
    expect((await g.call(member, 'GET', `/v1/servers/${server.id}/template`)).status).toBe(403);
  });

  it('leaves out the channels a MANAGE_SERVER member cannot view, with their overrides, and shows the owner all', async () => {
    const owner = newId();
    const manager = newId();
    const made = (await g.call(owner, 'POST', '/v1/servers', { name: 'Secrets', isPublic: true })).body;
    expect((await g.call(manager, 'POST', `/v1/servers/${made.id}/join`)).status).toBe(200);
    const managers = (await g.call(owner, 'POST', `/v1/servers/${made.id}/roles`, { name: 'managers', permissions: toMask(MANAGE_SERVER) }))
      .body;
    expect((await g.call(owner, 'PUT', `/v1/servers/${made.id}/members/${manager}/roles/${managers.id}`)).status).toBe(204);
    const staff = (await g.call(owner, 'POST', `/v1/servers/${made.id}/channels`, { name: 'staff', channelType: 'text', topic: 'raises' }))
      .body;
    const hidden = { roleId: made.id, allowBits: 0, denyBits: toMask(Permission.VIEW_CHANNEL) };
    expect((await g.call(owner, 'PUT', `/v1/channels/${staff.id}/permissions`, hidden)).status).toBe(200);
    expect((await g.call(owner, 'PATCH', `/v1/servers/${made.id}`, { entranceChannelId: staff.id })).status).toBe(200);

    const byManager = await g.call(manager, 'GET', `/v1/servers/${made.id}/template`);
    expect(byManager.status).toBe(200);
    const theirs = byManager.body.serialized_source_guild;
    expect(theirs.channels.map((c: { name: string }) => c.name)).toEqual(['General', 'general', 'General']);
    expect(JSON.stringify(byManager.body)).not.toContain('raises');
    expect(theirs.system_channel_id).toBeNull();
    expect(theirs.channels.flatMap((c: { permission_overwrites: unknown[] }) => c.permission_overwrites)).toEqual([]);

    const byOwner = (await g.call(owner, 'GET', `/v1/servers/${made.id}/template`)).body.serialized_source_guild;
    const ownersStaff = byOwner.channels.find((c: { name: string }) => c.name === 'staff');
    expect(ownersStaff).toMatchObject({
      topic: 'raises',
      permission_overwrites: [{ id: 0, type: 0, allow: '0', deny: String(Permission.VIEW_CHANNEL) }],
    });
    expect(byOwner.system_channel_id).toBe(ownersStaff.id);
  });

  it('exports a hidden channel as an @everyone overwrite denying VIEW_CHANNEL, so it stays out of sight after an import', async () => {
    const owner = newId();
    const made = (await g.call(owner, 'POST', '/v1/servers', { name: 'Hidden things' })).body;
    const make = async (name: string, channelType = 'text') =>
      (await g.call(owner, 'POST', `/v1/servers/${made.id}/channels`, { name, channelType })).body;
    const staff = await make('staff');
    const quiet = await make('quiet');
    const shown = await make('shown');
    for (const c of [staff, quiet, shown])
      expect((await g.call(owner, 'PATCH', `/v1/channels/${c.id}`, { isHidden: true })).status).toBe(200);
    // quiet already denies @everyone SEND_MESSAGES: the deny is merged into that overwrite; shown allows VIEW_CHANNEL: left as it is.
    const everyone = (allow: bigint, deny: bigint) => ({ roleId: made.id, allowBits: Number(allow), denyBits: Number(deny) });
    await g.call(owner, 'PUT', `/v1/channels/${quiet.id}/permissions`, everyone(0n, Permission.SEND_MESSAGES));
    await g.call(owner, 'PUT', `/v1/channels/${shown.id}/permissions`, everyone(Permission.VIEW_CHANNEL, 0n));

    const exported = (await g.call(owner, 'GET', `/v1/servers/${made.id}/template`)).body;
    const overwritesOf = (name: string) =>
      exported.serialized_source_guild.channels.find((c: { name: string }) => c.name === name).permission_overwrites;
    expect(overwritesOf('staff')).toEqual([{ id: 0, type: 0, allow: '0', deny: String(Permission.VIEW_CHANNEL) }]);
    expect(overwritesOf('quiet')).toEqual([
      { id: 0, type: 0, allow: '0', deny: String(Permission.VIEW_CHANNEL | Permission.SEND_MESSAGES) },
    ]);
    expect(overwritesOf('shown')).toEqual([{ id: 0, type: 0, allow: String(Permission.VIEW_CHANNEL), deny: '0' }]);
    expect(exported.report.map((r: { name: string; outcome: string }) => [r.name, r.outcome])).toEqual([
      ['staff', 'changed'],
      ['quiet', 'changed'],
      ['shown', 'changed'],
    ]);

    const again = await imported(owner, exported);
    const member = newId();
    expect((await g.call(owner, 'PATCH', `/v1/servers/${again.server.id}`, { isPublic: true })).status).toBe(200);
    expect((await g.call(member, 'POST', `/v1/servers/${again.server.id}/join`)).status).toBe(200);
    const seen = (await get(member, `/v1/servers/${again.server.id}/channels`)).map((c: { name: string }) => c.name);
    expect(seen).toEqual(['shown', 'general', 'General']);
  });

  it('names in its report what a template does not carry: a locked voice channel, musicLocked, join-to-create, DJ roles', async () => {
    const owner = newId();
    const made = (await g.call(owner, 'POST', '/v1/servers', { name: 'Locked things' })).body;
    const [voice] = (await get(owner, `/v1/servers/${made.id}/channels`)).filter((c: { channelType: string }) => c.channelType === 'voice');
    const jtc = (await g.call(owner, 'POST', `/v1/servers/${made.id}/channels`, { name: 'Join to create', channelType: 'voice' })).body;
    const dj = (await g.call(owner, 'POST', `/v1/servers/${made.id}/roles`, { name: 'dj' })).body;
    expect((await g.call(owner, 'PATCH', `/v1/channels/${voice.id}`, { isLocked: true, musicLocked: true })).status).toBe(200);
    expect((await g.call(owner, 'PATCH', `/v1/servers/${made.id}`, { jtcChannelId: jtc.id, djRoleIds: [dj.id] })).status).toBe(200);

    const { report, serialized_source_guild: guild } = (await g.call(owner, 'GET', `/v1/servers/${made.id}/template`)).body;
    const voiceNumber = guild.channels.find((c: { name: string; type: number }) => c.name === 'General' && c.type === 2).id;
    expect(report).toEqual([
      {
        kind: 'channel',
        id: voice.id,
        templateId: voiceNumber,
        name: 'General',
        outcome: 'dropped',
        note: expect.stringContaining('isLocked'),
      },
      {
        kind: 'channel',
        id: voice.id,
        templateId: voiceNumber,
        name: 'General',
        outcome: 'dropped',
        note: expect.stringContaining('musicLocked'),
      },
      { kind: 'setting', id: made.id, templateId: null, name: 'jtcChannelId', outcome: 'dropped', note: expect.any(String) },
      { kind: 'setting', id: made.id, templateId: null, name: 'djRoleIds', outcome: 'dropped', note: expect.any(String) },
    ]);
  });

  it('exports a server made through the API, and importing the export gives back the same server', async () => {
    const owner = newId();
    const made = (await g.call(owner, 'POST', '/v1/servers', { name: 'Made here' })).body;
    const channels = await get(owner, `/v1/servers/${made.id}/channels`);
    await g.call(owner, 'PATCH', `/v1/channels/${channels[0].id}`, { isNsfw: true, slowmodeSeconds: 30, topic: 'hi' });
    const exported = (await g.call(owner, 'GET', `/v1/servers/${made.id}/template`)).body;
    expect(exported.serialized_source_guild.channels.map((c: { name: string; type: number }) => [c.name, c.type])).toEqual([
      ['General', 4],
      ['general', 0],
      ['General', 2],
    ]);
    const again = await imported(owner, exported);
    const reExported = (await g.call(owner, 'GET', `/v1/servers/${again.server.id}/template`)).body;
    expect(reExported.serialized_source_guild).toEqual(exported.serialized_source_guild);
  });
});

/** Random templates of what this platform can hold; export -> import -> export must be the identity. */
const name = fc.stringMatching(/^[a-z][a-z0-9-]{0,15}$/);
const mask = fc.bigInt({ min: 0n, max: (1n << 32n) - 1n }).map(String);
const randomTemplate = fc
  .record({
    roles: fc.array(
      fc.record({ name, permissions: mask, color: fc.integer({ min: 0, max: 0xffffff }), hoist: fc.boolean(), mentionable: fc.boolean() }),
      { maxLength: 5 },
    ),
    everyone: mask,
    categories: fc.array(name, { maxLength: 3 }),
    channels: fc.array(
      fc.record({
        name,
        voice: fc.boolean(),
        parent: fc.nat(),
        inCategory: fc.boolean(),
        nsfw: fc.boolean(),
        slowmode: fc.integer({ min: 0, max: 21_600 }),
        limit: fc.integer({ min: 0, max: 99 }),
        topic: fc.option(name, { nil: null }),
        overrides: fc.array(fc.record({ role: fc.nat(), allow: mask, deny: mask }), { maxLength: 2 }),
      }),
      { maxLength: 6 },
    ),
  })
  .map((t) => {
    const roles = [{ id: 0, name: '@everyone', permissions: t.everyone }, ...t.roles.map((r, i) => ({ id: i + 1, ...r }))];
    const categories = t.categories.map((n, i) => ({ id: i + 1, type: 4, name: n, position: i }));
    const channels = t.channels.map((c, i) => ({
      id: categories.length + i + 1,
      type: c.voice ? 2 : 0,
      name: c.name,
      position: i,
      topic: c.voice ? null : c.topic,
      nsfw: c.nsfw,
      rate_limit_per_user: c.voice ? 0 : c.slowmode,
      user_limit: c.voice ? c.limit : 0,
      parent_id: c.inCategory && categories.length > 0 ? (categories[c.parent % categories.length]?.id ?? null) : null,
      permission_overwrites: [
        ...new Map(
          c.overrides.map((o) => [o.role % roles.length, { id: o.role % roles.length, type: 0, allow: o.allow, deny: o.deny }]),
        ).values(),
      ],
    }));
    return { name: 'random', serialized_source_guild: { name: 'Random server', roles, channels: [...categories, ...channels] } };
  });

describe('export -> import -> export', () => {
  it('is the identity for random servers', async () => {
    const owner = newId();
    await fc.assert(
      fc.asyncProperty(randomTemplate, async (template) => {
        const first = await imported(owner, template);
        const exported = (await g.call(owner, 'GET', `/v1/servers/${first.server.id}/template`)).body;
        const second = await imported(owner, exported);
        const reExported = (await g.call(owner, 'GET', `/v1/servers/${second.server.id}/template`)).body;
        expect(reExported.serialized_source_guild).toEqual(exported.serialized_source_guild);
      }),
      { numRuns: 20, seed: 2026 },
    );
  });
});
