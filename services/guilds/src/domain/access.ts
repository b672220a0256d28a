import type { Channel, PermissionOverride } from '@chat/contracts';
import { ALL_PERMISSIONS, Permission } from '@chat/contracts';
import { forbidden, notFound, type Queryable } from '@chat/kit';
import { findMembership, type MembershipRow } from '../db/access.ts';
import { findChannel, findChannels, listChannels } from '../db/channels.ts';
import { overridesConcerning } from '../db/overrides.ts';
import type { ServerRow } from '../db/servers.ts';
import { toBigInts } from '../db/sql.ts';
import { type ChannelList, type ChannelLists, groupBy } from './channel-list.ts';
import {
  type ApplicableOverrides,
  channelPermissions,
  has,
  type MemberPermissionInput,
  type PermissionTrace,
  type Rank,
  serverPermissions,
} from './permissions.ts';

/**
 * The one door of every route and RPC: who the caller is in a server or channel, and what they may
 * do there, computed by the pure permission module from one snapshot of the database.
 */

export interface ServerAccess {
  server: ServerRow;
  userId: string;
  isMember: boolean;
  isOwner: boolean;
  /** The member's roles besides @everyone, highest first. */
  roleIds: string[];
  /** What the permission function takes for this member (an explanation recomputes from it). */
  memberInput: MemberPermissionInput;
  rank: Rank;
  /** Server-level mask; 0 for a non-member. */
  permissions: bigint;
  /** The voice channel the member is connected to in this server, if any. */
  voiceChannelId: string | null;
  /** The version of the server's channel list, read in the same statement (domain/channel-list.ts). */
  channelListVersion: number;
}

export interface ChannelAccess extends ServerAccess {
  channel: Channel;
  /** Channel-level mask; 0 when the user may not view the channel. */
  channelPermissions: bigint;
}

function toAccess(row: MembershipRow, userId: string): ServerAccess {
  const isOwner = row.owner_id === userId;
  const isMember = row.is_member;
  const rolePermissions = toBigInts(row.role_permissions);
  const memberInput: MemberPermissionInput = {
    isOwner,
    everyone: BigInt(row.everyone_permissions),
    roles: row.role_ids.map((id, i) => ({ id, permissions: rolePermissions[i]! })),
  };
  const permissions = isMember ? serverPermissions(memberInput) : 0n;
  return {
    server: row,
    userId,
    isMember,
    isOwner,
    roleIds: row.role_ids,
    memberInput,
    rank: { isOwner, highest: row.highest_position },
    permissions,
    voiceChannelId: isMember ? row.voice_channel_id : null,
    channelListVersion: row.channel_list_version,
  };
}

/** The access of a user to a server, or undefined for an unknown server. Never throws on visibility. */
export async function loadServerAccess(db: Queryable, serverId: string, userId: string): Promise<ServerAccess | undefined> {
  const row = await findMembership(db, serverId, userId);
  return row && toAccess(row, userId);
}

/** Access to a server the user may see: a member, or anyone for a public server; otherwise 404. */
export async function serverAccess(db: Queryable, serverId: string, userId: string): Promise<ServerAccess> {
  const access = await loadServerAccess(db, serverId, userId);
  if (!access || (!access.isMember && !access.server.is_public)) throw notFound('Server');
  return access;
}

/**
 * Access of a member. A public server's non-member can see the server, so they get a 403; any
 * other stranger gets the 404 of serverAccess.
 */
export async function memberAccess(db: Queryable, serverId: string, userId: string): Promise<ServerAccess> {
  const access = await serverAccess(db, serverId, userId);
  if (!access.isMember) throw forbidden('You are not a member of this server');
  return access;
}

export function requirePermission(mask: bigint, bit: bigint, name: string): void {
  if (!has(mask, bit)) throw forbidden(`Missing permission ${name}`);
}

/** Only the overrides of this channel that concern this member, sorted into the algorithm's slots. */
export function applicableOverrides(
  access: Pick<ServerAccess, 'userId' | 'roleIds'> & { server: { id: string } },
  overrides: readonly PermissionOverride[],
): ApplicableOverrides {
  const bits = (o: PermissionOverride) => ({ allow: BigInt(o.allowBits), deny: BigInt(o.denyBits) });
  const everyone = overrides.find((o) => o.roleId === access.server.id);
  const member = overrides.find((o) => o.userId === access.userId);
  // In the member's role order (highest first), so an explanation names the highest role.
  const roles = access.roleIds.flatMap((roleId) => {
    const o = overrides.find((x) => x.roleId === roleId);
    return o ? [{ roleId, ...bits(o) }] : [];
  });
  return { everyone: everyone && bits(everyone), roles, member: member && bits(member) };
}

/**
 * The member's mask in the channel: the permission function decides, hidden channels included.
 * With a trace, the same two functions also record why (the server level is recomputed into it).
 */
function maskIn(access: ServerAccess, channel: Channel, overrides: readonly PermissionOverride[], trace?: PermissionTrace): bigint {
  if (!access.isMember) {
    trace?.decide(ALL_PERMISSIONS, false, { source: 'none' });
    return 0n;
  }
  const serverMask = trace ? serverPermissions(access.memberInput, trace) : access.permissions;
  return channelPermissions(
    serverMask,
    applicableOverrides(access, overrides),
    {
      isHidden: channel.isHidden,
      isChannelOwner: channel.ownerId === access.userId,
      isConnected: access.voiceChannelId === channel.id,
    },
    trace,
  );
}

/**
 * The access of a user to a channel, or undefined for an unknown channel. Never throws on
 * visibility. A trace, when given, receives the explanation of the mask. With the kept channel
 * lists (reads only), the channel and its overrides come from its server's list at the version the
 * membership query reads: one round trip once the channel's server is known.
 */
export async function loadChannelAccess(
  db: Queryable,
  channelId: string,
  userId: string,
  trace?: PermissionTrace,
  lists?: ChannelLists,
): Promise<ChannelAccess | undefined> {
  if (lists) return loadKeptChannelAccess(db, lists, channelId, userId, trace);
  const channel = await findChannel(db, channelId);
  if (!channel) return undefined;
  const access = await loadServerAccess(db, channel.serverId, userId);
  if (!access) return undefined;
  const overrides = access.isMember ? await overridesConcerning(db, [channel.id], [access.server.id, ...access.roleIds], userId) : [];
  return { ...access, channel, channelPermissions: maskIn(access, channel, overrides, trace) };
}

async function loadKeptChannelAccess(
  db: Queryable,
  lists: ChannelLists,
  channelId: string,
  userId: string,
  trace?: PermissionTrace,
): Promise<ChannelAccess | undefined> {
  const serverId = lists.serverOf(channelId) ?? (await findChannel(db, channelId))?.serverId;
  if (!serverId) return undefined;
  const access = await loadServerAccess(db, serverId, userId);
  if (!access) return undefined;
  const list = await lists.of(db, serverId, access.channelListVersion);
  // Gone at this version (deleted since): unknown, as without the list.
  const channel = list.channel(channelId);
  if (!channel) return undefined;
  return { ...access, channel, channelPermissions: maskIn(access, channel, list.overridesOf(channelId), trace) };
}

/** Access to a channel the user may view (VIEW_CHANNEL there); otherwise 404, as if it did not exist. */
export async function channelAccess(
  db: Queryable,
  channelId: string,
  userId: string,
  trace?: PermissionTrace,
  lists?: ChannelLists,
): Promise<ChannelAccess> {
  const access = await loadChannelAccess(db, channelId, userId, trace, lists);
  if (!access || !has(access.channelPermissions, Permission.VIEW_CHANNEL)) throw notFound('Channel');
  return access;
}

/**
 * The server's channels this member may view, each with the member's mask in it: from the kept
 * channel list when one is given (reads), else from the rows.
 */
export async function visibleChannels(
  db: Queryable,
  access: ServerAccess,
  lists?: ChannelLists,
): Promise<readonly { channel: Channel; permissions: bigint }[]> {
  if (lists) return (await keptChannels(db, access, lists)).visible;
  const channels = await listChannels(db, access.server.id);
  const overrides = await overridesConcerning(
    db,
    channels.map((c) => c.id),
    [access.server.id, ...access.roleIds],
    access.userId,
  );
  return viewable(access, channels, (channelId) => overrides.filter((o) => o.channelId === channelId));
}

/** The server's kept channel list at the version read with the membership, and the channels of it the member may view. */
export async function keptChannels(
  db: Queryable,
  access: ServerAccess,
  lists: ChannelLists,
): Promise<{ list: ChannelList; visible: readonly { channel: Channel; permissions: bigint }[] }> {
  const list = await lists.of(db, access.server.id, access.channelListVersion);
  // Computed once per member and list version: a search of a server with a thousand channels would
  // otherwise run the permission function a thousand times per request.
  return { list, visible: list.memo(`viewable:${maskInputs(access)}`, () => viewable(access, list.channels, list.overridesOf)) };
}

/** Every input of maskIn on the member's side, as read by this request's membership query. */
function maskInputs(access: ServerAccess): string {
  return [access.isMember, access.permissions, access.userId, access.voiceChannelId, ...access.roleIds].join('|');
}

function viewable(
  access: ServerAccess,
  channels: Channel[],
  overridesOf: (channelId: string) => readonly PermissionOverride[],
): { channel: Channel; permissions: bigint }[] {
  return channels
    .map((channel) => ({ channel, permissions: maskIn(access, channel, overridesOf(channel.id)) }))
    .filter((c) => has(c.permissions, Permission.VIEW_CHANNEL));
}

/**
 * Which of these channels the user may view now: one membership question per server concerned and
 * one query of overrides for all of them, whatever the number of channels. Unknown ids are absent.
 */
export async function viewableAmong(db: Queryable, userId: string, channelIds: string[]): Promise<string[]> {
  const channels = await findChannels(db, [...new Set(channelIds)]);
  const byServer = groupBy(channels, (c) => c.serverId);
  const visible = await Promise.all(
    [...byServer].map(async ([serverId, inServer]) => {
      const access = await loadServerAccess(db, serverId, userId);
      if (!access?.isMember) return [];
      const ids = inServer.map((c) => c.id);
      const overrides = await overridesConcerning(db, ids, [serverId, ...access.roleIds], userId);
      return inServer.filter((c) =>
        has(
          maskIn(
            access,
            c,
            overrides.filter((o) => o.channelId === c.id),
          ),
          Permission.VIEW_CHANNEL,
        ),
      );
    }),
  );
  return visible.flat().map((c) => c.id);
}
