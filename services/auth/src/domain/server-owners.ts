import type { Queryable } from '@chat/kit';
import * as guilds from '../db/guilds.ts';

/**
 * Auth's read-model of guilds' servers and members, behind the server-owner badge. Each change
 * answers the owner whose badge may have changed (null when none).
 */
export const recordServerOwner = (tx: Queryable, serverId: string, ownerId: string) => guilds.upsertServerOwner(tx, serverId, ownerId);
export const recordServerDeleted = (tx: Queryable, serverId: string) => guilds.deleteServer(tx, serverId);
export const recordMemberJoined = (tx: Queryable, serverId: string, userId: string) => guilds.addMember(tx, serverId, userId);
export const recordMemberLeft = (tx: Queryable, serverId: string, userId: string) => guilds.removeMember(tx, serverId, userId);
