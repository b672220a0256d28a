import type { Channel, PermissionOverride } from '@chat/contracts';
import { type Queryable, setBounded } from '@chat/kit';
import { listChannels } from '../db/channels.ts';
import { overridesOfServer } from '../db/overrides.ts';

/** A server's channels in list order, with each channel's overrides, as of `version` or later. */
export interface ChannelList {
  version: number;
  channels: Channel[];
  /** One of the channels, by id; undefined when the server has no such channel at this version. */
  channel(channelId: string): Channel | undefined;
  overridesOf(channelId: string): readonly PermissionOverride[];
  /**
   * What `compute` answers for one member, kept with this version of the list: `key` must name
   * every input of the member's side (a channel-list change makes a new list, so the list's side
   * needs no key). The answer is shared between requests; callers must not change it.
   */
  memo<T>(key: string, compute: () => T): T;
}

/**
 * Members whose answers a list keeps (the oldest go first): a busy server's active readers, not all
 * its members. A thousand channels take about 64 KB an answer, so a big server keeps some 16 MB.
 */
const MEMBERS_KEPT = 256;

/**
 * Each server's channel list kept in this process between reads, so that listing a server's
 * channels costs the membership query alone instead of three round trips (issue 18). A kept list
 * serves a request only when its version is the one that request's membership query read
 * (db/access.ts): every change of channels, overrides or categories bumps the version in its own
 * transaction (migrations/0212_channel_list_versions.sql), so a change shows at once, on every
 * replica, without waiting for an event. A list is loaded after its version was read, so it is
 * never older than its version says (at worst newer, as a request a moment later would see it).
 * Reads only: writes decide on the rows they lock, never on this.
 */
export class ChannelLists {
  private readonly lists = new Map<string, ChannelList>();
  // A channel never moves to another server: once seen, its server is known for good.
  private readonly servers = new Map<string, string>();

  constructor(private readonly capacity = 10_000) {}

  /** The server of a channel this process has seen in a list (a channel deleted since included). */
  serverOf(channelId: string): string | undefined {
    return this.servers.get(channelId);
  }

  /** The list of the server at `version` (read by the caller's membership query): kept, or loaded. */
  async of(db: Queryable, serverId: string, version: number): Promise<ChannelList> {
    const kept = this.lists.get(serverId);
    if (kept?.version === version) return kept;
    const list = await loadChannelList(db, serverId, version);
    // A request that read an older version than the kept one does not replace the newer list.
    if (!kept || kept.version < version) this.keep(serverId, list);
    return list;
  }

  private keep(serverId: string, list: ChannelList): void {
    // Deleted first: the newest list goes last, so the servers read most recently stay longest.
    this.lists.delete(serverId);
    setBounded(this.lists, serverId, list, this.capacity);
    for (const channel of list.channels) setBounded(this.servers, channel.id, serverId, this.capacity * 10);
  }
}

/** The server's channels and every override of them, read after `version` was. */
export async function loadChannelList(db: Queryable, serverId: string, version: number): Promise<ChannelList> {
  const [channels, overrides] = await Promise.all([listChannels(db, serverId), overridesOfServer(db, serverId)]);
  return channelList(version, channels, overrides);
}

/** A list from its rows: channels in list order, and the overrides of any of them. */
export function channelList(version: number, channels: Channel[], overrides: readonly PermissionOverride[]): ChannelList {
  const byChannel = groupBy(overrides, (o) => o.channelId);
  const byId = new Map(channels.map((c) => [c.id, c]));
  const answers = new Map<string, unknown>();
  return {
    version,
    channels,
    channel: (channelId) => byId.get(channelId),
    overridesOf: (channelId) => byChannel.get(channelId) ?? [],
    memo<T>(key: string, compute: () => T): T {
      if (answers.has(key)) return answers.get(key) as T;
      const answer = compute();
      setBounded(answers, key, answer, MEMBERS_KEPT);
      return answer;
    },
  };
}

/** Items by key, in their order within each group. */
export function groupBy<T>(items: readonly T[], keyOf: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const group = groups.get(keyOf(item));
    if (group) group.push(item);
    else groups.set(keyOf(item), [item]);
  }
  return groups;
}
