import { Permission } from '@chat/contracts';
import { enqueueEvents, type OutboxRow, outboxRow, type Queryable } from '@chat/kit';
import { holdServerAccess } from '../db/servers.ts';
import { type ChannelViews, channelViews, type ViewScope } from './audience.ts';
import type { Ctx } from './context.ts';

/** User ids per event at most: a change in a big server is told in several events, each far below the bus's payload limit. */
export const USERS_PER_VIEW_EVENT = 1_000;

/** The server-level bits that decide who sees a channel: a role change that touches none of them changes no view. */
const VIEW_BITS = Permission.VIEW_CHANNEL | Permission.MANAGE_CHANNELS | Permission.ADMINISTRATOR;

export const changesViews = (before: bigint, after: bigint): boolean => ((before ^ after) & VIEW_BITS) !== 0n;

/** Whose view of the channel an override of @everyone, of a role or of a member can change. */
export function overrideScope(serverId: string, channelId: string, target: { roleId?: string | null; userId?: string | null }): ViewScope {
  if (target.roleId === serverId) return { channelId };
  return { channelId, only: target.roleId ? { userIds: [], roleIds: [target.roleId] } : { userIds: [target.userId!], roleIds: [] } };
}

/** Whose views of the server's channels a role's change can change: its holders, or everyone's for @everyone. */
export function roleScope(serverId: string, roleId: string): ViewScope {
  return roleId === serverId ? {} : { only: { userIds: [], roleIds: [roleId] } };
}

/** What a change that may show or hide channels does once it is written: tells who gained and who lost a view. */
export interface ViewWatch {
  announce(ctx: Ctx): Promise<void>;
}

/**
 * Who gains or loses the view of a channel through a change of roles, overrides or a channel's
 * hidden flag is told as on Discord: the channel appears (`guilds.channel.revealed`, CHANNEL_CREATE
 * on the socket) or goes (`guilds.channel.hidden`, CHANNEL_DELETE). Called before the change, in
 * its transaction: takes the views of the members in scope; `announce`, after the change, compares
 * them with the views then, for the same members. The changes of one server that can show or hide
 * channels take turns (holdServerAccess), so each gain and loss is told once.
 */
export async function watchViews(tx: Queryable, serverId: string, scope: ViewScope): Promise<ViewWatch> {
  // Exact under concurrency: another such change either committed before this snapshot or waits for our commit.
  await holdServerAccess(tx, serverId);
  const before = await channelViews(tx, serverId, scope);
  // The same members after: a role deleted meanwhile no longer names its holders.
  const same = scope.only ? { ...scope, only: { userIds: before.memberIds, roleIds: [] } } : scope;
  return {
    async announce(ctx) {
      const after = await channelViews(tx, serverId, same);
      await enqueueEvents(tx, viewEvents(serverId, before, after, ctx.requestId));
    },
  };
}

function viewEvents(serverId: string, before: ChannelViews, after: ChannelViews, requestId: string | undefined): OutboxRow[] {
  const rows: OutboxRow[] = [];
  for (const [id, { channel, viewerIds }] of after.channels) {
    const gained = [...viewerIds].filter((userId) => !before.channels.get(id)?.viewerIds.has(userId));
    for (const userIds of chunks(gained)) rows.push(outboxRow('guilds.channel.revealed', { channel, userIds }, requestId));
  }
  for (const [id, { viewerIds }] of before.channels) {
    const lost = [...viewerIds].filter((userId) => !after.channels.get(id)?.viewerIds.has(userId));
    for (const userIds of chunks(lost)) rows.push(outboxRow('guilds.channel.hidden', { id, serverId, userIds }, requestId));
  }
  return rows;
}

function chunks(ids: string[]): string[][] {
  const out: string[][] = [];
  for (let i = 0; i < ids.length; i += USERS_PER_VIEW_EVENT) out.push(ids.slice(i, i + USERS_PER_VIEW_EVENT));
  return out;
}
