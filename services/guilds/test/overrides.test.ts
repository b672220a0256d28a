import { ALL_PERMISSIONS, Permission, toMask } from '@chat/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId, startGuilds, until } from './harness.ts';

/**
 * Issue 16, item 3: an override change (add, remove, allow or deny) may touch only bits the actor
 * holds in the channel, and only the overrides of @everyone, of roles below the actor's highest and
 * of members the actor outranks. The owner and ADMINISTRATOR hold every bit.
 */
const g = await startGuilds();
afterAll(() => g.close());

const [owner, moderator, peer, plain] = [newId(), newId(), newId(), newId()];
let serverId: string;
let moderators: { id: string; position: number };
let seniors: { id: string };
let juniors: { id: string };

const createRole = async (name: string, permissions: bigint) => {
  const res = await g.call(owner, 'POST', `/v1/servers/${serverId}/roles`, { name, permissions: toMask(permissions) });
  expect(res.status).toBe(201);
  return res.body;
};
const give = async (userId: string, roleId: string) =>
  expect((await g.call(owner, 'PUT', `/v1/servers/${serverId}/members/${userId}/roles/${roleId}`)).status).toBe(204);
const newChannel = async (name: string) =>
  (await g.call(owner, 'POST', `/v1/servers/${serverId}/channels`, { name, channelType: 'text' })).body.id as string;
const put = (actor: string, channelId: string, body: object) => g.call(actor, 'PUT', `/v1/channels/${channelId}/permissions`, body);
const overridesOf = async (channelId: string) =>
  (await g.db.query('SELECT role_id, user_id, allow_bits, deny_bits FROM channel_overrides WHERE channel_id = $1 ORDER BY id', [channelId]))
    .rows;

beforeAll(async () => {
  serverId = (await g.call(owner, 'POST', '/v1/servers', { name: 'Overrides', isPublic: true })).body.id;
  for (const user of [moderator, peer, plain]) expect((await g.call(user, 'POST', `/v1/servers/${serverId}/join`)).status).toBe(200);
  // Created bottom-up: juniors (1) < moderators (2) < seniors (3).
  seniors = await createRole('seniors', 0n);
  moderators = await createRole('moderators', Permission.MANAGE_ROLES);
  juniors = await createRole('juniors', 0n);
  await give(moderator, moderators.id);
  await give(peer, moderators.id);
});

describe('changing an override', () => {
  it('refuses to lift a deny of a bit the actor lacks in the channel, by PUT or DELETE, and changes nothing', async () => {
    const channelId = await newChannel('announcements');
    const muted = await put(owner, channelId, { roleId: serverId, allowBits: 0, denyBits: toMask(Permission.SEND_MESSAGES) });
    expect(muted.status).toBe(200);
    const before = await overridesOf(channelId);

    const lifted = await put(moderator, channelId, { roleId: serverId, allowBits: 0, denyBits: 0 });
    expect(lifted.status).toBe(403);
    expect(lifted.body).toEqual({ error: expect.stringContaining('do not have in this channel') });
    const swapped = await put(moderator, channelId, { roleId: serverId, allowBits: toMask(Permission.SEND_MESSAGES), denyBits: 0 });
    expect(swapped.status).toBe(403);
    const deleted = await g.call(moderator, 'DELETE', `/v1/channels/${channelId}/permissions/${muted.body.id}`);
    expect(deleted.status).toBe(403);
    expect(await overridesOf(channelId)).toEqual(before);
    expect((await g.call(moderator, 'POST', `/v1/channels/${channelId}/messages`, { content: 'hi' })).status).toBe(403);
  });

  it('lets the actor change bits they hold while keeping the ones they lack as they are', async () => {
    const channelId = await newChannel('partly');
    const send = toMask(Permission.SEND_MESSAGES);
    expect((await put(owner, channelId, { roleId: serverId, allowBits: 0, denyBits: send })).status).toBe(200);
    expect((await put(owner, channelId, { roleId: juniors.id, allowBits: 0, denyBits: send })).status).toBe(200);
    // The moderator lacks SEND_MESSAGES here and holds ADD_REACTIONS: denying and lifting that is theirs to do.
    const both = toMask(Permission.SEND_MESSAGES | Permission.ADD_REACTIONS);
    const added = await put(moderator, channelId, { roleId: juniors.id, allowBits: 0, denyBits: both });
    expect(added.status).toBe(200);
    expect(added.body.denyBits).toBe(both);
    const removed = await put(moderator, channelId, { roleId: juniors.id, allowBits: 0, denyBits: send });
    expect(removed.status).toBe(200);
    expect(await overridesOf(channelId)).toEqual(
      expect.arrayContaining([
        { role_id: serverId, user_id: null, allow_bits: 0, deny_bits: send },
        { role_id: juniors.id, user_id: null, allow_bits: 0, deny_bits: send },
      ]),
    );
  });

  it('does not let a member unmute themselves or edit their own override, and leaves it to the owner', async () => {
    const channelId = await newChannel('muted');
    const mute = await put(owner, channelId, { userId: moderator, allowBits: 0, denyBits: toMask(Permission.SEND_MESSAGES) });
    expect(mute.status).toBe(200);
    expect((await put(moderator, channelId, { userId: moderator, allowBits: 0, denyBits: 0 })).status).toBe(403);
    expect((await g.call(moderator, 'DELETE', `/v1/channels/${channelId}/permissions/${mute.body.id}`)).status).toBe(403);
    // Even a change of bits they hold: their own override is not theirs to edit.
    const own = await put(moderator, channelId, {
      userId: moderator,
      allowBits: 0,
      denyBits: toMask(Permission.SEND_MESSAGES | Permission.ADD_REACTIONS),
    });
    expect(own.status).toBe(403);
    expect(own.body).toEqual({ error: expect.stringContaining('below your highest role') });
    expect(await overridesOf(channelId)).toEqual([
      { role_id: null, user_id: moderator, allow_bits: 0, deny_bits: toMask(Permission.SEND_MESSAGES) },
    ]);
    expect((await g.call(owner, 'DELETE', `/v1/channels/${channelId}/permissions/${mute.body.id}`)).status).toBe(204);
  });

  it('touches only overrides of @everyone, of roles below the actor’s highest and of members the actor outranks', async () => {
    const channelId = await newChannel('ranks');
    const react = { allowBits: 0, denyBits: toMask(Permission.ADD_REACTIONS) };
    expect((await put(moderator, channelId, { roleId: seniors.id, ...react })).status).toBe(403);
    expect((await put(moderator, channelId, { roleId: moderators.id, ...react })).status).toBe(403);
    expect((await put(moderator, channelId, { userId: peer, ...react })).status).toBe(403);
    expect((await put(moderator, channelId, { userId: owner, ...react })).status).toBe(403);
    expect(await overridesOf(channelId)).toEqual([]);

    const seniorsOverride = await put(owner, channelId, { roleId: seniors.id, ...react });
    expect((await g.call(moderator, 'DELETE', `/v1/channels/${channelId}/permissions/${seniorsOverride.body.id}`)).status).toBe(403);

    expect((await put(moderator, channelId, { roleId: juniors.id, ...react })).status).toBe(200);
    const plainOverride = await put(moderator, channelId, { userId: plain, ...react });
    expect(plainOverride.status).toBe(200);
    expect((await g.call(moderator, 'DELETE', `/v1/channels/${channelId}/permissions/${plainOverride.body.id}`)).status).toBe(204);
    // Last, as it takes ADD_REACTIONS from the moderator too: after it they may no longer change that bit.
    expect((await put(moderator, channelId, { roleId: serverId, ...react })).status).toBe(200);
    expect((await overridesOf(channelId)).map((o) => o.role_id ?? o.user_id).sort()).toEqual([juniors.id, seniors.id, serverId].sort());
  });

  it('checks a create against the override another transaction created meanwhile, so a concurrent owner deny is not lifted', async () => {
    const channelId = await newChannel('racing');
    const send = toMask(Permission.SEND_MESSAGES);
    expect((await put(owner, channelId, { roleId: serverId, allowBits: 0, denyBits: send })).status).toBe(200);

    // The owner's deny of SEND_MESSAGES for juniors, written and not yet committed when the moderator's PUT reads.
    const owners = await g.db.connect();
    try {
      await owners.query('BEGIN');
      await owners.query('INSERT INTO channel_overrides (id, channel_id, role_id, allow_bits, deny_bits) VALUES ($1, $2, $3, 0, $4)', [
        newId(),
        channelId,
        juniors.id,
        send,
      ]);
      const racing = put(moderator, channelId, { roleId: juniors.id, allowBits: 0, denyBits: toMask(Permission.ADD_REACTIONS) });
      await until(
        async () =>
          (await g.db.query("SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'")).rowCount! >
          0,
      );
      await owners.query('COMMIT');
      const res = await racing;
      expect(res.status).toBe(403);
      expect(res.body).toEqual({ error: 'You cannot allow, deny or lift a permission you do not have in this channel' });
    } finally {
      owners.release();
    }
    expect((await overridesOf(channelId)).find((o) => o.role_id === juniors.id)).toEqual({
      role_id: juniors.id,
      user_id: null,
      allow_bits: 0,
      deny_bits: send,
    });
    const updates = (await g.outbox('guilds.override.updated')).filter((e) => e.data.channelId === channelId);
    expect(updates).toHaveLength(1);
  });

  it('lets an ADMINISTRATOR lift any deny on roles below theirs', async () => {
    const admin = newId();
    expect((await g.call(admin, 'POST', `/v1/servers/${serverId}/join`)).status).toBe(200);
    const admins = await createRole('admins', Permission.ADMINISTRATOR);
    // New roles start at the bottom; the owner lifts it above every other.
    expect((await g.call(owner, 'PATCH', `/v1/servers/${serverId}/roles/${admins.id}`, { position: 4 })).status).toBe(200);
    await give(admin, admins.id);
    const channelId = await newChannel('admin');
    const muted = await put(owner, channelId, { roleId: serverId, allowBits: 0, denyBits: toMask(Permission.SEND_MESSAGES) });
    expect((await put(admin, channelId, { roleId: serverId, allowBits: 0, denyBits: 0 })).status).toBe(200);
    expect((await g.call(admin, 'DELETE', `/v1/channels/${channelId}/permissions/${muted.body.id}`)).status).toBe(204);
    expect(await overridesOf(channelId)).toEqual([]);
  });
});

describe('override bits', () => {
  it('answers 400 naming the bits no permission has, to the owner too, and stores nothing', async () => {
    const channelId = await newChannel('undefined-bits');
    const send = toMask(Permission.SEND_MESSAGES);
    const allowed = await put(owner, channelId, { roleId: serverId, allowBits: 2 ** 40, denyBits: 0 });
    expect(allowed.status).toBe(400);
    expect(allowed.body).toEqual({ error: 'body.allowBits: has permission bits this platform does not define: 40' });
    const denied = await put(owner, channelId, { userId: plain, allowBits: 0, denyBits: 2 ** 52 + send });
    expect(denied.status).toBe(400);
    expect(denied.body).toEqual({ error: 'body.denyBits: has permission bits this platform does not define: 52' });
    expect(await overridesOf(channelId)).toEqual([]);

    const everything = toMask(ALL_PERMISSIONS);
    expect((await put(owner, channelId, { roleId: serverId, allowBits: 0, denyBits: everything })).status).toBe(200);
    expect(await overridesOf(channelId)).toEqual([{ role_id: serverId, user_id: null, allow_bits: 0, deny_bits: everything }]);
  });
});
