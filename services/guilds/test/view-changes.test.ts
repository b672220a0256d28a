import { Permission, toMask } from '@chat/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHANNELS_PER_VIEW_EVENT, USERS_PER_VIEW_EVENT } from '../src/domain/view-changes.ts';
import { newId, startGuilds } from './harness.ts';

/**
 * Who gains or loses the view of a channel through a change of roles, overrides or a channel's
 * hidden flag is told: `guilds.channel.revealed` (CHANNEL_CREATE on the socket) and
 * `guilds.channel.hidden` (CHANNEL_DELETE), written in the change's transaction.
 */
const g = await startGuilds();
afterAll(() => g.close());

const VIEW = toMask(Permission.VIEW_CHANNEL);
const [owner, admin, manager, alice, bob] = [newId(), newId(), newId(), newId(), newId()];
let serverId: string;
let everyoneBits: bigint;

type Told = { channelId: string; userIds: string[] };
type ViewEvent = { channelIds: string[]; userIds: string[] };
const seen = { revealed: 0, hidden: 0 };

/** The view events written since the last call, as written: the channels and the users of each. */
async function events(): Promise<{ revealed: ViewEvent[]; hidden: ViewEvent[] }> {
  const take = async (subject: 'revealed' | 'hidden') => {
    const written = (await g.outbox(`guilds.channel.${subject}`)).slice(seen[subject]);
    seen[subject] += written.length;
    return written.map(({ data }) => ({
      channelIds: subject === 'revealed' ? (data.channels as { id: string }[]).map((c) => c.id) : (data.ids as string[]),
      userIds: data.userIds as string[],
    }));
  };
  return { revealed: await take('revealed'), hidden: await take('hidden') };
}

/** The view events written since the last call, per channel: who gained or lost it, sorted. */
async function told(): Promise<{ revealed: Told[]; hidden: Told[] }> {
  const perChannel = (list: ViewEvent[]) => {
    const users = new Map<string, string[]>();
    for (const { channelIds, userIds } of list) for (const id of channelIds) users.set(id, [...(users.get(id) ?? []), ...userIds]);
    return [...users].map(([channelId, userIds]) => ({ channelId, userIds: userIds.sort() }));
  };
  const { revealed, hidden } = await events();
  return { revealed: perChannel(revealed), hidden: perChannel(hidden) };
}

const sorted = (...ids: string[]) => [...ids].sort();
const ok = async (res: ReturnType<typeof g.call>, status = 200) => {
  const answer = await res;
  expect(answer.status, JSON.stringify(answer.body)).toBe(status);
  return answer.body;
};
const newRole = (name: string, permissions: bigint) =>
  ok(g.call(owner, 'POST', `/v1/servers/${serverId}/roles`, { name, permissions: toMask(permissions) }), 201);
const give = (userId: string, roleId: string) => ok(g.call(owner, 'PUT', `/v1/servers/${serverId}/members/${userId}/roles/${roleId}`), 204);
const take = (userId: string, roleId: string) =>
  ok(g.call(owner, 'DELETE', `/v1/servers/${serverId}/members/${userId}/roles/${roleId}`), 204);
const putOverride = (channelId: string, body: object) => ok(g.call(owner, 'PUT', `/v1/channels/${channelId}/permissions`, body));
const canView = async (userId: string, channelId: string) => (await g.call(userId, 'GET', `/v1/channels/${channelId}`)).status === 200;

beforeAll(async () => {
  serverId = (await g.call(owner, 'POST', '/v1/servers', { name: 'Views', isPublic: true })).body.id;
  for (const user of [admin, manager, alice, bob]) await ok(g.call(user, 'POST', `/v1/servers/${serverId}/join`));
  await give(admin, (await newRole('admins', Permission.ADMINISTRATOR)).id);
  await give(manager, (await newRole('managers', Permission.MANAGE_CHANNELS | Permission.VIEW_CHANNEL)).id);
  const roles = await ok(g.call(owner, 'GET', `/v1/servers/${serverId}/roles`));
  everyoneBits = BigInt(roles.find((r: { id: string }) => r.id === serverId).permissions);
  await told();
});

describe('an override change', () => {
  it('hides the channel from those it denies, and shows it again when it goes; the channel comes with its reveal', async () => {
    const { id: channelId } = await g.newChannel(owner, serverId, 'denied');
    const deny = await putOverride(channelId, { roleId: serverId, allowBits: 0, denyBits: VIEW });
    // The owner and an administrator keep it; @everyone's override beats VIEW_CHANNEL from a role (Discord's order).
    expect(await told()).toEqual({ revealed: [], hidden: [{ channelId, userIds: sorted(alice, bob, manager) }] });
    expect([await canView(alice, channelId), await canView(manager, channelId)]).toEqual([false, false]);

    await ok(g.call(owner, 'DELETE', `/v1/channels/${channelId}/permissions/${deny.id}`), 204);
    expect(await told()).toEqual({ revealed: [{ channelId, userIds: sorted(alice, bob, manager) }], hidden: [] });
    const [revealed] = (await g.outbox('guilds.channel.revealed')).slice(-1);
    expect(revealed?.data.channels).toEqual([await ok(g.call(alice, 'GET', `/v1/channels/${channelId}`))]);
  });

  it('of one member or one role tells only those it concerns, and one that changes no view tells nobody', async () => {
    const { id: channelId } = await g.newChannel(owner, serverId, 'targeted');
    await putOverride(channelId, { userId: alice, allowBits: 0, denyBits: VIEW });
    expect(await told()).toEqual({ revealed: [], hidden: [{ channelId, userIds: [alice] }] });
    await putOverride(channelId, { userId: alice, allowBits: 0, denyBits: VIEW | toMask(Permission.SEND_MESSAGES) });
    await putOverride(channelId, { roleId: serverId, allowBits: 0, denyBits: toMask(Permission.ADD_REACTIONS) });
    expect(await told()).toEqual({ revealed: [], hidden: [] });

    const readers = await newRole('readers', 0n);
    await give(bob, readers.id);
    await putOverride(channelId, { roleId: readers.id, allowBits: 0, denyBits: VIEW });
    expect(await told()).toEqual({ revealed: [], hidden: [{ channelId, userIds: [bob] }] });
  });
});

describe('a role change', () => {
  it('giving or taking a role that an override lets see a closed channel shows or hides that channel to the member alone', async () => {
    const { id: channelId } = await g.newChannel(owner, serverId, 'club');
    await putOverride(channelId, { roleId: serverId, allowBits: 0, denyBits: VIEW });
    const club = await newRole('club', 0n);
    await putOverride(channelId, { roleId: club.id, allowBits: VIEW, denyBits: 0 });
    await told();

    await give(alice, club.id);
    expect(await told()).toEqual({ revealed: [{ channelId, userIds: [alice] }], hidden: [] });
    expect(await canView(alice, channelId)).toBe(true);
    await take(alice, club.id);
    expect(await told()).toEqual({ revealed: [], hidden: [{ channelId, userIds: [alice] }] });
    expect(await canView(alice, channelId)).toBe(false);

    await give(bob, club.id);
    await told();
    await ok(g.call(owner, 'DELETE', `/v1/servers/${serverId}/roles/${club.id}`), 204);
    expect(await told()).toEqual({ revealed: [], hidden: [{ channelId, userIds: [bob] }] });
  });

  it("changing @everyone's VIEW_CHANNEL hides and shows every channel no override opens; other bits and names tell nothing", async () => {
    const { id: open } = await g.newChannel(owner, serverId, 'open');
    const { id: allowed } = await g.newChannel(owner, serverId, 'allowed');
    await putOverride(allowed, { roleId: serverId, allowBits: VIEW, denyBits: 0 });
    await putOverride(open, { userId: bob, allowBits: VIEW, denyBits: 0 });
    await told();
    const everyone = (bits: bigint) =>
      ok(g.call(owner, 'PATCH', `/v1/servers/${serverId}/roles/${serverId}`, { permissions: toMask(bits) }));

    await everyone(everyoneBits & ~Permission.VIEW_CHANNEL);
    const { revealed, hidden } = await told();
    expect(revealed).toEqual([]);
    // Every channel but the one whose override allows it; the manager keeps VIEW_CHANNEL from their
    // role, bob keeps `open` through his own override.
    expect(hidden.map((h) => h.channelId)).toContain(open);
    expect(hidden.map((h) => h.channelId)).not.toContain(allowed);
    expect(hidden.find((h) => h.channelId === open)?.userIds).toEqual([alice]);

    await everyone(everyoneBits);
    const back = await told();
    expect(back.hidden).toEqual([]);
    expect(back.revealed.map((r) => r.channelId).sort()).toEqual(hidden.map((h) => h.channelId).sort());
    await everyone(everyoneBits & ~Permission.ADD_REACTIONS);
    await everyone(everyoneBits);
    const managers = (await ok(g.call(owner, 'GET', `/v1/servers/${serverId}/roles`))).find((r: { name: string }) => r.name === 'managers');
    await ok(g.call(owner, 'PATCH', `/v1/servers/${serverId}/roles/${managers.id}`, { name: 'channel managers' }));
    expect(await told()).toEqual({ revealed: [], hidden: [] });
  });
});

describe("a channel's hidden flag", () => {
  it('hides the channel from all but those who may see hidden ones, and shows it again', async () => {
    const { id: channelId } = await g.newChannel(owner, serverId, 'backstage');
    await ok(g.call(owner, 'PATCH', `/v1/channels/${channelId}`, { isHidden: true }));
    expect(await told()).toEqual({ revealed: [], hidden: [{ channelId, userIds: sorted(alice, bob) }] });
    await ok(g.call(owner, 'PATCH', `/v1/channels/${channelId}`, { name: 'backstage-2', isHidden: true }));
    expect(await told()).toEqual({ revealed: [], hidden: [] });
    await ok(g.call(owner, 'PATCH', `/v1/channels/${channelId}`, { isHidden: false }));
    expect(await told()).toEqual({ revealed: [{ channelId, userIds: sorted(alice, bob) }], hidden: [] });
  });

  it("keeps a hidden channel for its owner, whatever the owner's roles share with others", async () => {
    const { id: channelId } = await g.newChannel(owner, serverId, 'bobs-room');
    await g.db.query('UPDATE channels SET owner_id = $2 WHERE id = $1', [channelId, bob]);
    await ok(g.call(owner, 'PATCH', `/v1/channels/${channelId}`, { isHidden: true }));
    expect(await told()).toEqual({ revealed: [], hidden: [{ channelId, userIds: [alice] }] });
    expect([await canView(alice, channelId), await canView(bob, channelId)]).toEqual([false, true]);
  });
});

describe('a change for many members', () => {
  it(`names each channel once per group of members who gained or lost the same, ${USERS_PER_VIEW_EVENT} users and ${CHANNELS_PER_VIEW_EVENT} channels an event at most`, async () => {
    const crowd = (await ok(g.call(owner, 'POST', '/v1/servers', { name: 'Crowd', isPublic: true }), 201)).id as string;
    const members = Array.from({ length: USERS_PER_VIEW_EVENT + 1 }, () => newId());
    await g.db.query('INSERT INTO members (server_id, user_id) SELECT $1, unnest($2::uuid[])', [crowd, members]);
    // With the text and voice channels a server starts with: CHANNELS_PER_VIEW_EVENT + 1 channels.
    const start = (await ok(g.call(owner, 'GET', `/v1/servers/${crowd}/channels`))).length as number;
    for (let i = start; i <= CHANNELS_PER_VIEW_EVENT; i++) await g.newChannel(owner, crowd, `room-${i}`);
    const channelIds = (await ok(g.call(owner, 'GET', `/v1/servers/${crowd}/channels`))).map((c: { id: string }) => c.id) as string[];
    expect(channelIds).toHaveLength(CHANNELS_PER_VIEW_EVENT + 1);
    // One of them keeps a channel through an override of their own: they lost one channel fewer.
    const [keeper, ...others] = members;
    await putOverride(channelIds[0]!, { userId: keeper, allowBits: VIEW, denyBits: 0 });
    await events();

    const rolesOf = await ok(g.call(owner, 'GET', `/v1/servers/${crowd}/roles`));
    const bits = BigInt(rolesOf.find((r: { id: string }) => r.id === crowd).permissions);
    await ok(g.call(owner, 'PATCH', `/v1/servers/${crowd}/roles/${crowd}`, { permissions: toMask(bits & ~Permission.VIEW_CHANNEL) }));
    const { revealed, hidden } = await events();
    expect(revealed).toEqual([]);
    expect(hidden.map((e) => [e.userIds.length, e.channelIds.length])).toEqual([
      [USERS_PER_VIEW_EVENT, CHANNELS_PER_VIEW_EVENT],
      [USERS_PER_VIEW_EVENT, 1],
      [1, CHANNELS_PER_VIEW_EVENT],
    ]);
    expect(
      hidden
        .slice(0, 2)
        .flatMap((e) => e.channelIds)
        .sort(),
    ).toEqual([...channelIds].sort());
    expect(hidden[0]?.userIds.sort()).toEqual(sorted(...others));
    expect(hidden[2]?.userIds).toEqual([keeper]);
    expect(hidden[2]?.channelIds.sort()).toEqual(channelIds.slice(1).sort());
  });
});

describe('concurrent changes', () => {
  it('are told in turn: what a member was last told of a channel is what they may do', async () => {
    const everyone = (bits: bigint) =>
      ok(g.call(owner, 'PATCH', `/v1/servers/${serverId}/roles/${serverId}`, { permissions: toMask(bits) }));
    for (let round = 0; round < 8; round++) {
      const { id: channelId } = await g.newChannel(owner, serverId, `race-${round}`);
      const club = await newRole(`race-${round}`, 0n);
      await give(alice, club.id);
      await told();
      // Closing every channel to @everyone while an override keeps this one open to the member's role.
      await Promise.all([
        everyone(everyoneBits & ~Permission.VIEW_CHANNEL),
        putOverride(channelId, { roleId: club.id, allowBits: VIEW, denyBits: 0 }),
      ]);
      const { revealed, hidden } = await told();
      const aboutAlice = (list: Told[]) => list.filter((e) => e.channelId === channelId && e.userIds.includes(alice)).length;
      // Either nothing (she never lost it) or a loss then a gain, never a last word that she cannot see it.
      expect(await canView(alice, channelId)).toBe(true);
      expect({ round, hidden: aboutAlice(hidden) }).toEqual({ round, hidden: aboutAlice(revealed) });
      await everyone(everyoneBits);
      await told();
    }
  });
});
