import { Permission } from '@chat/contracts';
import { enqueueEvents, type OutboxRow, outboxRow, type Queryable } from '@chat/kit';
import { holdServerAccess } from '../db/servers.ts';
import { type ChannelViews, channelViews, type ViewScope } from './audience.ts';
import type { Ctx } from './context.ts';

/** User ids and channels per event at most: a change in a big server is told in several events, each far below the bus's payload limit. */
export const USERS_PER_VIEW_EVENT = 1_000;
export const CHANNELS_PER_VIEW_EVENT = 100;

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
  const same = scope.only ? { ...scope, only: { userIds: [...before.visible.keys()], roleIds: [] } } : scope;
  return {
    async announce(ctx) {
      const after = await channelViews(tx, serverId, same);
      await enqueueEvents(tx, viewEvents(serverId, before, after, ctx.requestId));
    },
  };
}

/** Members who gained (or lost) the same channels: one group, told in events of USERS_PER_VIEW_EVENT. */
type Group = { channelIds: string[]; userIds: string[] };

function viewEvents(serverId: string, before: ChannelViews, after: ChannelViews, requestId: string | undefined): OutboxRow[] {
  const { gained, lost } = groupedChanges(before, after);
  const rows: OutboxRow[] = [];
  for (const group of gained) {
    const channels = group.channelIds.map((id) => after.channels.get(id)!);
    for (const userIds of chunks(group.userIds, USERS_PER_VIEW_EVENT))
      for (const some of chunks(channels, CHANNELS_PER_VIEW_EVENT))
        rows.push(outboxRow('guilds.channel.revealed', { channels: some, userIds }, requestId));
  }
  for (const group of lost) {
    for (const userIds of chunks(group.userIds, USERS_PER_VIEW_EVENT))
      for (const ids of chunks(group.channelIds, CHANNELS_PER_VIEW_EVENT))
        rows.push(outboxRow('guilds.channel.hidden', { serverId, ids, userIds }, requestId));
  }
  return rows;
}

/**
 * Each member's gained and lost channels, members grouped by the same ones: a change to @everyone
 * in a big server is a few events naming each channel once, not one per channel and thousand members.
 */
function groupedChanges(before: ChannelViews, after: ChannelViews): { gained: Group[]; lost: Group[] } {
  const gained = new Map<string, Group>();
  const lost = new Map<string, Group>();
  const differenceOf = differences();
  const empty: ReadonlySet<string> = new Set();
  for (const [userId, was] of before.visible) {
    const difference = differenceOf(was, after.visible.get(userId) ?? empty);
    addTo(gained, difference.gained, userId);
    addTo(lost, difference.lost, userId);
  }
  return { gained: [...gained.values()], lost: [...lost.values()] };
}

/** Channel ids, and a key naming exactly them (made once per pair of sets, not once per member). */
type Channels = { ids: string[]; key: string };
type Difference = { gained: Channels; lost: Channels };
const channelsOf = (ids: string[]): Channels => ({ ids, key: ids.join(',') });

/** The channels gained and lost between two sets; members of one set of roles share their sets, so each pair is compared once. */
function differences(): (was: ReadonlySet<string>, now: ReadonlySet<string>) => Difference {
  const known = new Map<ReadonlySet<string>, Map<ReadonlySet<string>, Difference>>();
  return (was, now) => {
    const byNow = known.get(was) ?? new Map<ReadonlySet<string>, Difference>();
    known.set(was, byNow);
    const found = byNow.get(now);
    if (found) return found;
    const difference = {
      gained: channelsOf([...now].filter((id) => !was.has(id))),
      lost: channelsOf([...was].filter((id) => !now.has(id))),
    };
    byNow.set(now, difference);
    return difference;
  };
}

function addTo(groups: Map<string, Group>, channels: Channels, userId: string): void {
  if (channels.ids.length === 0) return;
  const group = groups.get(channels.key);
  if (group) group.userIds.push(userId);
  else groups.set(channels.key, { channelIds: channels.ids, userIds: [userId] });
}

function chunks<T>(items: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}
