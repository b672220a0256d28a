import type { Channel, PermissionOverride } from '@chat/contracts';
import type { Queryable } from '@chat/kit';
import { listChannels } from '../db/channels.ts';
import { overridesOfServer } from '../db/overrides.ts';

/** A server's channels in list order, with each channel's overrides, as of `version` or later. */
export interface ChannelList {
  version: number;
  channels: Channel[];
  overridesOf(channelId: string): readonly PermissionOverride[];
}

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

  constructor(private readonly capacity = 10_000) {}

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
    this.lists.delete(serverId);
    if (this.lists.size >= this.capacity) this.lists.delete(this.lists.keys().next().value as string);
    this.lists.set(serverId, list);
  }
}

/** The server's channels and every override of them, read after `version` was. */
export async function loadChannelList(db: Queryable, serverId: string, version: number): Promise<ChannelList> {
  const [channels, overrides] = await Promise.all([listChannels(db, serverId), overridesOfServer(db, serverId)]);
  const byChannel = new Map<string, PermissionOverride[]>();
  for (const o of overrides) byChannel.set(o.channelId, [...(byChannel.get(o.channelId) ?? []), o]);
  return { version, channels, overridesOf: (channelId) => byChannel.get(channelId) ?? [] };
}
