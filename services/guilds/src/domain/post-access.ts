import { Permission } from '@chat/contracts';
import { badRequest, notFound, type Queryable } from '@chat/kit';
import { accessVersionOfChannel } from '../db/access.ts';
import { type ChannelAccess, loadChannelAccess, requirePermission } from './access.ts';
import { has } from './permissions.ts';

/**
 * What a member may do in a channel, kept in memory for posting so that a post reads no permission
 * rows: one snapshot per (channel, member), stamped with its server's access version. The post
 * statement checks that version (post_channel_message), so a snapshot that a change of roles,
 * overrides, membership, bans or the channel has made stale can never authorise: the post is
 * refused and retried with a fresh snapshot. A snapshot that would refuse is never trusted either:
 * refusals are decided on fresh rows.
 */

export interface AccessSnapshot {
  version: number;
  access: ChannelAccess;
}

/** A bounded map of snapshots (oldest dropped first), with the newest access version seen per server. */
export class AccessSnapshots {
  private readonly snapshots = new Map<string, AccessSnapshot>();
  // A snapshot older than another of its server is stale: no need to learn it from a refused post.
  private readonly newestVersion = new Map<string, number>();

  constructor(private readonly capacity = 10_000) {}

  get(channelId: string, userId: string): AccessSnapshot | undefined {
    const snapshot = this.snapshots.get(keyOf(channelId, userId));
    if (!snapshot) return undefined;
    const newest = this.newestVersion.get(snapshot.access.server.id) ?? snapshot.version;
    return snapshot.version < newest ? undefined : snapshot;
  }

  set(channelId: string, userId: string, snapshot: AccessSnapshot): void {
    const key = keyOf(channelId, userId);
    this.snapshots.delete(key);
    this.snapshots.set(key, snapshot);
    const serverId = snapshot.access.server.id;
    if (snapshot.version > (this.newestVersion.get(serverId) ?? -1)) this.newestVersion.set(serverId, snapshot.version);
    if (this.snapshots.size > this.capacity) this.evictOldest();
  }

  private evictOldest(): void {
    const oldest = this.snapshots.keys().next().value;
    if (oldest !== undefined) this.snapshots.delete(oldest);
    // Bounded as well: a server's newest version is only a shortcut, forgetting it is safe.
    if (this.newestVersion.size > this.capacity) this.newestVersion.clear();
  }
}

const keyOf = (channelId: string, userId: string) => `${channelId}:${userId}`;

/** What a post carries that needs more than SEND_MESSAGES: files, a reply. */
export interface PostKind {
  withFiles: boolean;
  withReply: boolean;
}

/**
 * The checks of a member's post, in the order of the answers: 404 unless they may view the
 * channel, 400 outside a text channel, 403 without SEND_MESSAGES (ATTACH_FILES with files,
 * READ_MESSAGE_HISTORY with a reply, as Discord asks for a message reference). A reply is refused
 * here, before its target is looked up: a member who may not read the history cannot learn which
 * of its ids exist from the answers.
 */
export function assertMayPost(access: ChannelAccess | undefined, kind: PostKind): asserts access is ChannelAccess {
  if (!access || !has(access.channelPermissions, Permission.VIEW_CHANNEL)) throw notFound('Channel');
  if (access.channel.channelType !== 'text') throw badRequest('Messages belong in text channels');
  requirePermission(access.channelPermissions, Permission.SEND_MESSAGES, 'SEND_MESSAGES');
  if (kind.withFiles) requirePermission(access.channelPermissions, Permission.ATTACH_FILES, 'ATTACH_FILES');
  if (kind.withReply) requirePermission(access.channelPermissions, Permission.READ_MESSAGE_HISTORY, 'READ_MESSAGE_HISTORY');
}

function mayPost(access: ChannelAccess, kind: PostKind): boolean {
  try {
    assertMayPost(access, kind);
    return true;
  } catch {
    return false;
  }
}

/** A snapshot read from the rows now, the version first (see accessVersionOfChannel). */
export async function loadSnapshot(db: Queryable, channelId: string, userId: string): Promise<AccessSnapshot | undefined> {
  const version = await accessVersionOfChannel(db, channelId);
  if (version === undefined) return undefined;
  const access = await loadChannelAccess(db, channelId, userId);
  return access && { version, access };
}

/**
 * A snapshot that lets the member post: the cached one when it does, else one read now, which
 * answers the refusal (assertMayPost) when it does not. `fresh` skips the cache (after a refused
 * post).
 */
export async function postingSnapshot(
  db: Queryable,
  snapshots: AccessSnapshots,
  target: PostKind & { channelId: string; userId: string; fresh?: boolean },
): Promise<AccessSnapshot> {
  const { channelId, userId } = target;
  const cached = target.fresh ? undefined : snapshots.get(channelId, userId);
  if (cached && mayPost(cached.access, target)) return cached;
  const loaded = await loadSnapshot(db, channelId, userId);
  assertMayPost(loaded?.access, target);
  const snapshot = loaded as AccessSnapshot;
  snapshots.set(channelId, userId, snapshot);
  return snapshot;
}
