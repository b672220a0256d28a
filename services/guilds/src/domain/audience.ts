import { Permission } from '@chat/contracts';
import { notFound, type Queryable } from '@chat/kit';
import { findServerBase, listComemberIds, listMemberMasks, listServerIdsOfUser, type MemberMaskRow } from '../db/audience.ts';
import { findChannel } from '../db/channels.ts';
import { listOverrides } from '../db/overrides.ts';
import { toBigInts } from '../db/sql.ts';
import { applicableOverrides, type ServerAccess } from './access.ts';
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
  const viewers = members
    .map((row) => memberAccess(base, row))
    .filter((m) => {
      const slots = applicableOverrides({ ...m, server: { id: channel.serverId } }, overrides);
      // The same visibility as REST: a hidden channel's events reach only those who may see it.
      const visibility = {
        isHidden: channel.isHidden,
        isChannelOwner: channel.ownerId === m.userId,
        isConnected: m.voiceChannelId === channel.id,
      };
      return has(channelPermissions(m.permissions, slots, visibility), Permission.VIEW_CHANNEL);
    });
  return { serverId: channel.serverId, members: viewers.map((m) => ({ userId: m.userId, roleIds: m.roleIds })) };
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
