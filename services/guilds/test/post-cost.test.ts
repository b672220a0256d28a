import { Permission, toMask } from '@chat/contracts';
import { countRoundTrips } from '@chat/testkit';
import { v7 as uuidv7 } from 'uuid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGuilds } from './harness.ts';

/**
 * The post path of issue 18: one statement per post, authorised by an access snapshot kept in
 * memory that a permission change makes stale, so that it can never authorise after the change.
 */

const g = await startGuilds();
afterAll(() => g.close());

let owner: string;
let alice: string;
let server: { id: string };
let general: string;

const messages = (channelId: string) => `/v1/channels/${channelId}/messages`;
const post = (userId: string, channelId: string, content = 'hello') => g.call(userId, 'POST', messages(channelId), { content });
const contents = async (channelId: string) =>
  (await g.db.query('SELECT content FROM messages WHERE channel_id = $1 ORDER BY id', [channelId])).rows.map((r) => r.content);
const accessVersion = async () =>
  Number((await g.db.query('SELECT access_version FROM servers WHERE id = $1', [server.id])).rows[0].access_version);
const newChannel = async (name: string) =>
  (await g.call(owner, 'POST', `/v1/servers/${server.id}/channels`, { name, channelType: 'text' })).body.id as string;
const newRole = async (name: string, permissions: bigint) =>
  (await g.call(owner, 'POST', `/v1/servers/${server.id}/roles`, { name, permissions: toMask(permissions) })).body.id as string;
const grantRole = async (userId: string, roleId: string) =>
  expect((await g.call(owner, 'PUT', `/v1/servers/${server.id}/members/${userId}/roles/${roleId}`)).status).toBeLessThan(300);

beforeAll(async () => {
  [owner, alice] = await Promise.all([g.knownUser('owner'), g.knownUser('alice')]);
  server = (await g.call(owner, 'POST', '/v1/servers', { name: 'Cost', isPublic: true })).body;
  expect((await g.call(alice, 'POST', `/v1/servers/${server.id}/join`)).status).toBe(200);
  const channels = (await g.call(owner, 'GET', `/v1/servers/${server.id}/channels`)).body as { id: string; channelType: string }[];
  general = channels.find((c) => c.channelType === 'text')!.id;
});

describe('the cost of a post', () => {
  it('is one round trip to PostgreSQL once the member’s access is known, and writes the message with its event', async () => {
    expect((await post(alice, general, 'first')).status).toBe(201);
    const { result, roundTrips, statements } = await countRoundTrips(() => post(alice, general, 'second'));
    expect(result.status).toBe(201);
    expect(statements).toEqual(['guilds_post_channel_message']);
    expect(roundTrips).toBe(1);
    const events = await g.outbox('guilds.message.created');
    expect(events.at(-1)?.data).toEqual({ ...result.body, reactions: undefined });
    expect((await contents(general)).slice(-2)).toEqual(['first', 'second']);
  });
});

describe('a stale access snapshot never authorises', () => {
  it('refuses a post right after the role that granted SEND_MESSAGES loses it (403), and stores nothing', async () => {
    const channel = await newChannel('role-revoked');
    // @everyone may not send here; the role may.
    await g.call(owner, 'PUT', `/v1/channels/${channel}/permissions`, {
      roleId: server.id,
      allowBits: toMask(0n),
      denyBits: toMask(Permission.SEND_MESSAGES),
    });
    const speakers = await newRole('speakers', Permission.VIEW_CHANNEL | Permission.SEND_MESSAGES);
    await g.call(owner, 'PUT', `/v1/channels/${channel}/permissions`, {
      roleId: speakers,
      allowBits: toMask(Permission.SEND_MESSAGES),
      denyBits: toMask(0n),
    });
    await grantRole(alice, speakers);
    expect((await post(alice, channel, 'allowed')).status).toBe(201);
    const revoked = await g.call(owner, 'PUT', `/v1/channels/${channel}/permissions`, {
      roleId: speakers,
      allowBits: toMask(0n),
      denyBits: toMask(Permission.SEND_MESSAGES),
    });
    expect(revoked.status).toBe(200);
    const refused = await post(alice, channel, 'after the revoke');
    expect(refused.status).toBe(403);
    expect(refused.body).toEqual({ error: 'Missing permission SEND_MESSAGES' });
    expect(await contents(channel)).toEqual(['allowed']);
  });

  it('refuses a post after a change another replica made in the database (role permissions, overrides, kick)', async () => {
    const carol = await g.knownUser('carol');
    expect((await g.call(carol, 'POST', `/v1/servers/${server.id}/join`)).status).toBe(200);
    const channel = await newChannel('replica');
    const writers = await newRole('writers', Permission.VIEW_CHANNEL | Permission.SEND_MESSAGES);
    await grantRole(carol, writers);
    await g.db.query('UPDATE roles SET permissions = permissions & ~$2::bigint WHERE id = $1', [
      server.id,
      Number(Permission.SEND_MESSAGES),
    ]);
    expect((await post(carol, channel, 'by role')).status).toBe(201);

    // The role loses SEND_MESSAGES, written straight to the database as another replica would.
    await g.db.query('UPDATE roles SET permissions = $2 WHERE id = $1', [writers, Number(Permission.VIEW_CHANNEL)]);
    expect((await post(carol, channel, 'role changed')).status).toBe(403);

    await g.db.query('UPDATE roles SET permissions = $2 WHERE id = $1', [
      writers,
      Number(Permission.VIEW_CHANNEL | Permission.SEND_MESSAGES),
    ]);
    expect((await post(carol, channel, 'role restored')).status).toBe(201);
    await g.db.query(`INSERT INTO channel_overrides (id, channel_id, user_id, allow_bits, deny_bits) VALUES ($1, $2, $3, 0, $4)`, [
      uuidv7(),
      channel,
      carol,
      Number(Permission.VIEW_CHANNEL),
    ]);
    expect((await post(carol, channel, 'hidden by override')).status).toBe(404);

    await g.db.query('DELETE FROM channel_overrides WHERE channel_id = $1', [channel]);
    expect((await post(carol, channel, 'visible again')).status).toBe(201);
    await g.db.query('DELETE FROM members WHERE server_id = $1 AND user_id = $2', [server.id, carol]);
    expect((await post(carol, channel, 'kicked')).status).toBe(404);
    expect(await contents(channel)).toEqual(['by role', 'role restored', 'visible again']);
    // Back in for the tests after this one.
    await g.db.query('UPDATE roles SET permissions = permissions | $2::bigint WHERE id = $1', [
      server.id,
      Number(Permission.SEND_MESSAGES),
    ]);
    expect((await g.call(carol, 'POST', `/v1/servers/${server.id}/join`)).status).toBe(200);
  });

  it('applies a slowmode set after the snapshot was taken', async () => {
    const channel = await newChannel('slow-later');
    expect((await post(alice, channel, 'one')).status).toBe(201);
    expect((await g.call(owner, 'PATCH', `/v1/channels/${channel}`, { slowmodeSeconds: 60 })).status).toBe(200);
    expect((await post(alice, channel, 'two')).status).toBe(201);
    expect((await post(alice, channel, 'three')).status).toBe(429);
    expect(await contents(channel)).toEqual(['one', 'two']);
  });
});

describe('the access version', () => {
  it('moves with every change that can change what a member may do, and not when a member joins', async () => {
    const channel = await newChannel('versioned');
    const role = await newRole('versioned', Permission.SEND_MESSAGES);
    const changes: [string, () => Promise<unknown>][] = [
      ['a role’s permissions', () => g.db.query('UPDATE roles SET permissions = 0 WHERE id = $1', [role])],
      [
        'a member’s roles (given)',
        () => g.db.query('INSERT INTO member_roles (server_id, user_id, role_id) VALUES ($1, $2, $3)', [server.id, alice, role]),
      ],
      ['a member’s roles (taken)', () => g.db.query('DELETE FROM member_roles WHERE role_id = $1', [role])],
      [
        'an override (set)',
        () => g.db.query('INSERT INTO channel_overrides (id, channel_id, role_id) VALUES ($1, $2, $3)', [uuidv7(), channel, role]),
      ],
      ['an override (changed)', () => g.db.query('UPDATE channel_overrides SET deny_bits = 1 WHERE channel_id = $1', [channel])],
      ['an override (removed)', () => g.db.query('DELETE FROM channel_overrides WHERE channel_id = $1', [channel])],
      ['the channel', () => g.db.query('UPDATE channels SET is_hidden = true WHERE id = $1', [channel])],
      ['a ban', () => g.db.query('INSERT INTO bans (server_id, user_id, banned_by) VALUES ($1, $2, $3)', [server.id, uuidv7(), owner])],
      ['a role deleted', () => g.db.query('DELETE FROM roles WHERE id = $1', [role])],
      ['the owner', () => g.db.query('UPDATE servers SET owner_id = $2 WHERE id = $1', [server.id, alice])],
      ['the owner back', () => g.db.query('UPDATE servers SET owner_id = $2 WHERE id = $1', [server.id, owner])],
      ['a member leaving', () => g.db.query('DELETE FROM members WHERE server_id = $1 AND user_id = $2', [server.id, alice])],
    ];
    for (const [what, change] of changes) {
      const before = await accessVersion();
      await change();
      expect({ what, moved: (await accessVersion()) > before }).toEqual({ what, moved: true });
    }
    const before = await accessVersion();
    expect((await g.call(alice, 'POST', `/v1/servers/${server.id}/join`)).status).toBe(200);
    await g.db.query('UPDATE servers SET name = $2 WHERE id = $1', [server.id, 'Renamed']);
    expect(await accessVersion()).toBe(before);
  });
});

describe('post_channel_message', () => {
  const call = async (overrides: {
    version?: number | null;
    slowmode?: number;
    replyTo?: string | null;
    id?: string;
    channel?: string;
  }) => {
    const channel = overrides.channel ?? general;
    const id = overrides.id ?? uuidv7();
    const payload = { id: uuidv7(), subject: 'guilds.message.created', occurredAt: new Date().toISOString(), data: { id, content: 'sql' } };
    const { rows } = await g.db.query(
      'SELECT * FROM post_channel_message($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)',
      [
        overrides.version === undefined ? await accessVersion() : overrides.version,
        overrides.slowmode ?? 0,
        id,
        channel,
        server.id,
        alice,
        'sql',
        {},
        overrides.replyTo ?? null,
        { users: [], roles: [], everyone: false },
        'default',
        null,
        null,
        null,
        new Date().toISOString(),
        payload.id,
        payload.subject,
        payload,
        {},
      ],
    );
    return rows[0] as { outcome: string; retry_after: number | null; id: string | null; author_name: string | null };
  };
  const outboxCount = async () => Number((await g.db.query('SELECT count(*) FROM outbox')).rows[0].count);

  it('writes nothing when the access version moved, the reply is not in the channel, or the slowmode window is open', async () => {
    const channel = await newChannel('sql-refusals');
    const [messagesBefore, eventsBefore] = [await contents(channel), await outboxCount()];
    expect((await call({ channel, version: (await accessVersion()) - 1 })).outcome).toBe('stale');
    expect((await call({ channel, replyTo: uuidv7() })).outcome).toBe('no_reply');
    expect((await call({ channel, slowmode: 30 })).outcome).toBe('posted');
    const refused = await call({ channel, slowmode: 30 });
    expect(refused.outcome).toBe('slowmode');
    expect(refused.retry_after).toBeGreaterThan(29);
    expect(refused.retry_after).toBeLessThanOrEqual(30);
    expect(await contents(channel)).toEqual([...messagesBefore, 'sql']);
    expect(await outboxCount()).toBe(eventsBefore + 1);
  });

  it('moves the id past a latest one issued by a clock ahead, and fills in the event’s id and author', async () => {
    const channel = await newChannel('sql-clock');
    const ahead = uuidv7({ msecs: Date.now() + 60_000 });
    expect((await call({ channel, id: ahead })).outcome).toBe('posted');
    const posted = await call({ channel });
    expect(posted.outcome).toBe('posted');
    expect(posted.id! > ahead).toBe(true);
    expect(posted.id!.slice(0, 13)).not.toBe(ahead.slice(0, 13));
    const { rows } = await g.db.query(`SELECT payload FROM outbox WHERE payload->'data'->>'id' = $1`, [posted.id]);
    expect(rows).toHaveLength(1);
    expect(rows[0].payload.data).toEqual({ id: posted.id, content: 'sql', authorName: posted.author_name, authorAvatar: null });
    expect(posted.author_name).toMatch(/^alice /);
  });
});
