import { type Channel, Permission, type PermissionOverride } from '@chat/contracts';
import { notFound, type Queryable } from '@chat/kit';
import { findServerBase, listComemberIds, listMemberMasks, listServerIdsOfUser, type MemberMaskRow } from '../db/audience.ts';
import { findChannel, listChannels } from '../db/channels.ts';
import { listOverrides, overridesOfServer } from '../db/overrides.ts';
import { toBigInts } from '../db/sql.ts';
import { applicableOverrides, type ServerAccess } from './access.ts';
import { groupBy } from './channel-list.ts';
import { channelPermissions, has, serverPermissions } from './permissions.ts';

/**
 * Who receives what on the real-time socket: the same permission function as REST, applied to
 * every member of a server from one snapshot of the database.
 */

type Base = { owner_id: string; everyone_permissions: number };

function memberAccess(base: Base, row: MemberMaskRow): Pick<ServerAccess, 'userId' | 'roleIds' | 'permissions' | 'voiceChannelId'> {
  const isOwner = row.user_id === base.owner_id;
  const rolePermissions = toBigInts(row.role_permissions);
  const roles = row.role_ids.map((id, i) => ({ id, permissions: rolePermissions[i] as bigint }));
  const permissions = serverPermissions({ isOwner, everyone: BigInt(base.everyone_permissions), roles });
  return { userId: row.user_id, roleIds: row.role_ids, permissions, voiceChannelId: row.voice_channel_id };
}

/** The members who may VIEW_CHANNEL now (overrides included). 404 for an unknown channel. */
export async function channelViewers(
  db: Queryable,
  channelId: string,
): Promise<{ channelId: string; serverId: string; userIds: string[] }> {
  const viewers = await viewersAmong(db, channelId);
  if (!viewers) throw notFound('Channel');
  return { channelId, serverId: viewers.serverId, userIds: viewers.members.map((m) => m.userId) };
}

/**
 * The members who may VIEW_CHANNEL now, with their roles: all of them, or with `only` those
 * named or holding one of the roles. Undefined for an unknown channel.
 */
export async function viewersAmong(
  db: Queryable,
  channelId: string,
  only?: { userIds: string[]; roleIds: string[] },
): Promise<{ serverId: string; members: { userId: string; roleIds: string[] }[] } | undefined> {
  const channel = await findChannel(db, channelId);
  const base = channel && (await findServerBase(db, channel.serverId));
  if (!channel || !base) return undefined;
  const [members, overrides] = await Promise.all([listMemberMasks(db, channel.serverId, only), listOverrides(db, channelId)]);
  const viewers = members.map((row) => memberAccess(base, row)).filter((m) => mayView(m, channel, overrides));
  return { serverId: channel.serverId, members: viewers.map((m) => ({ userId: m.userId, roleIds: m.roleIds })) };
}

type MemberView = ReturnType<typeof memberAccess>;

/** VIEW_CHANNEL by the permission function of REST: a hidden channel's events reach only those who may see it. */
function mayView(member: MemberView, channel: Channel, overrides: readonly PermissionOverride[]): boolean {
  const slots = applicableOverrides({ ...member, server: { id: channel.serverId } }, overrides);
  const visibility = {
    isHidden: channel.isHidden,
    isChannelOwner: channel.ownerId === member.userId,
    isConnected: member.voiceChannelId === channel.id,
  };
  return has(channelPermissions(member.permissions, slots, visibility), Permission.VIEW_CHANNEL);
}

/** Whose views to take: one channel of the server or all of them; the members named or holding one of the roles, or all. */
export type ViewScope = { channelId?: string; only?: { userIds: string[]; roleIds: string[] } };

/** The channels a scope took, and for each member it took the ids of those they may view. */
export interface ChannelViews {
  channels: Map<string, Channel>;
  /** Members with the same roles and nothing of their own share one set: callers must not change it. */
  visible: Map<string, ReadonlySet<string>>;
}

/**
 * Who may view which channels of the server, within the scope, from one snapshot. The permission
 * function runs once per set of roles and channel, and again per member only for the channels
 * where something of their own counts (their override, the channel they own or are connected to):
 * a server of 10,000 members with a few roles costs a few hundred runs, not 10,000 per channel.
 * Empty for an unknown server.
 */
export async function channelViews(db: Queryable, serverId: string, scope: ViewScope): Promise<ChannelViews> {
  const base = await findServerBase(db, serverId);
  if (!base) return { channels: new Map(), visible: new Map() };
  const { channelId, only } = scope;
  const [channels, overrides, rows] = await Promise.all([
    channelId ? findChannel(db, channelId).then((c) => (c?.serverId === serverId ? [c] : [])) : listChannels(db, serverId),
    channelId ? listOverrides(db, channelId) : overridesOfServer(db, serverId),
    listMemberMasks(db, serverId, only),
  ]);
  const overridesOf = groupBy(overrides, (o) => o.channelId);
  const ownChannels = ownChannelsOfMembers(channels, overrides);
  const byRoles = new Map<string, ReadonlySet<string>>();
  const visible = new Map<string, ReadonlySet<string>>();
  for (const row of rows) {
    const member = memberAccess(base, row);
    const rolesKey = `${member.userId === base.owner_id}:${member.roleIds.join(',')}`;
    let shared = byRoles.get(rolesKey);
    if (!shared) {
      // What the roles alone decide: someone with these roles and nothing of their own.
      const anyone = { ...member, userId: '', voiceChannelId: null };
      shared = new Set(channels.filter((c) => mayView(anyone, c, overridesOf.get(c.id) ?? [])).map((c) => c.id));
      byRoles.set(rolesKey, shared);
    }
    const own = [...(ownChannels.get(member.userId) ?? []), ...(member.voiceChannelId ? [member.voiceChannelId] : [])];
    visible.set(member.userId, own.length === 0 ? shared : withOwn(shared, own, member, channels, overridesOf));
  }
  return { channels: new Map(channels.map((c) => [c.id, c])), visible };
}

function withOwn(
  shared: ReadonlySet<string>,
  own: string[],
  member: MemberView,
  channels: Channel[],
  overridesOf: Map<string, PermissionOverride[]>,
): ReadonlySet<string> {
  const mine = new Set(shared);
  for (const channel of channels.filter((c) => own.includes(c.id))) {
    if (mayView(member, channel, overridesOf.get(channel.id) ?? [])) mine.add(channel.id);
    else mine.delete(channel.id);
  }
  return mine;
}

/** For each user, the channels where something of theirs counts: their own override, a channel they own. */
function ownChannelsOfMembers(channels: Channel[], overrides: PermissionOverride[]): Map<string, string[]> {
  const own = groupBy(
    overrides.filter((o) => o.userId),
    (o) => o.userId!,
  );
  const ids = new Map([...own].map(([userId, of]) => [userId, of.map((o) => o.channelId)]));
  for (const c of channels.filter((c) => c.ownerId)) ids.set(c.ownerId!, [...(ids.get(c.ownerId!) ?? []), c.id]);
  return ids;
}

/** The members of a server, only those holding `permission` at server level when given. 404 unknown. */
export async function serverMembers(db: Queryable, serverId: string, permission?: number): Promise<string[]> {
  const base = await findServerBase(db, serverId);
  if (!base) throw notFound('Server');
  const members = (await listMemberMasks(db, serverId)).map((row) => memberAccess(base, row));
  const bit = permission === undefined ? undefined : BigInt(permission);
  return members.filter((m) => bit === undefined || has(m.permissions, bit)).map((m) => m.userId);
}

/** The servers a user is a member of (READY's serverIds). */
export async function serversOfUser(db: Queryable, userId: string): Promise<{ serverIds: string[] }> {
  return { serverIds: await listServerIdsOfUser(db, userId) };
}

/** Everyone who shares a server with the user (who sees their presence). */
export async function comembersOf(db: Queryable, userId: string): Promise<{ userIds: string[] }> {
  return { userIds: await listComemberIds(db, userId) };
}
