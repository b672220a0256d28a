import type { Membership } from '@chat/contracts';
import type { Queryable } from '@chat/kit';
import type { AuthConfig } from '../config.ts';
import * as guilds from '../db/guilds.ts';
import { refreshServerOwnerBadge } from './badges.ts';

/**
 * Auth's read-model of guilds' servers and members, behind the server-owner badge. Each change
 * answers the owner whose badge may have changed (null when none).
 */
export const recordServerOwner = (tx: Queryable, serverId: string, ownerId: string) => guilds.upsertServerOwner(tx, serverId, ownerId);
export const recordServerDeleted = (tx: Queryable, serverId: string) => guilds.deleteServer(tx, serverId);
export const recordMemberJoined = (tx: Queryable, serverId: string, userId: string) => guilds.addMember(tx, serverId, userId);
export const recordMemberLeft = (tx: Queryable, serverId: string, userId: string) => guilds.removeMember(tx, serverId, userId);

type BadgeConfig = Pick<AuthConfig, 'SERVER_OWNER_BADGE_MEMBERS' | 'EARLY_SUPPORTER_BEFORE'>;

/**
 * A page of guilds' servers, for a read-model that starts after the GUILDS stream dropped its
 * oldest events: recorded as their events would be, each owner concerned recomputed once.
 */
export async function backfillServerOwners(tx: Queryable, config: BadgeConfig, servers: { id: string; ownerId: string }[]): Promise<void> {
  const owners = new Set<string>();
  for (const server of servers) {
    const previous = await recordServerOwner(tx, server.id, server.ownerId);
    if (previous) owners.add(previous);
    owners.add(server.ownerId);
  }
  for (const owner of owners) await refreshServerOwnerBadge(tx, config, owner);
}

/** A page of guilds' memberships, likewise: joins that are already known count nothing. */
export async function backfillMembers(tx: Queryable, config: BadgeConfig, members: Membership[]): Promise<void> {
  const owners = new Set<string>();
  for (const { serverId, userId } of members) {
    const owner = await recordMemberJoined(tx, serverId, userId);
    if (owner) owners.add(owner);
  }
  for (const owner of owners) await refreshServerOwnerBadge(tx, config, owner);
}
