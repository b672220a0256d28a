import {
  AUTH_SUBJECTS,
  CALL_SUBJECTS,
  ChannelViewersRpc,
  GUILDS_SUBJECTS,
  KEYS_SUBJECTS,
  MESSAGES_SUBJECTS,
  MUSIC_SUBJECTS,
  Permission,
  READ_STATE_SUBJECTS,
  REALTIME_SUBJECTS,
  type RpcContract,
  ServerMembersRpc,
  SOCIAL_SUBJECTS,
  toMask,
  UserComembersRpc,
  UserContactsRpc,
  UserFriendsRpc,
  VOICE_SUBJECTS,
} from '@chat/contracts';
import { setBounded } from '@chat/kit';
import type { Redis } from 'ioredis';
import type { z } from 'zod';
import type { VersionGuard } from './session-store.ts';

/** Asks another service over its typed RPC contract; the reply comes back parsed by it. */
export type Ask = <Req extends z.ZodType, Rep extends z.ZodType>(
  contract: RpcContract<Req, Rep>,
  data: z.input<Req>,
) => Promise<z.output<Rep>>;

// biome-ignore lint/suspicious/noExplicitAny: event payloads were validated by their dispatch schema; each rule reads its own fields
type Data = any;

const CACHE_TTL_MS = 10 * 60_000;
const MAX_CACHED = 20_000;
const VERSION_TTL_S = 86_400;

/**
 * Who receives a dispatch. A list served from the cache carries the versions it was computed at:
 * the delivery checks them in its own script (one Redis round trip per event, not two) and refuses
 * when one moved, and the dispatcher then asks again with `fresh`.
 */
export interface Recipients {
  userIds: string[];
  guard?: VersionGuard;
}

interface Cached {
  serverVersion: string;
  channelVersion: string;
  serverId: string;
  userIds: string[];
  at: number;
}

/** The events that change who sees what, and whose version they replace: a server's or a channel's. */
const OUTDATES: Readonly<Record<string, 'server' | 'channel'>> = {
  [GUILDS_SUBJECTS.memberJoined]: 'server',
  [GUILDS_SUBJECTS.memberLeft]: 'server',
  [GUILDS_SUBJECTS.memberUpdated]: 'server',
  [GUILDS_SUBJECTS.memberBanned]: 'server',
  [GUILDS_SUBJECTS.memberUnbanned]: 'server',
  [GUILDS_SUBJECTS.roleCreated]: 'server',
  [GUILDS_SUBJECTS.roleUpdated]: 'server',
  [GUILDS_SUBJECTS.roleDeleted]: 'server',
  [GUILDS_SUBJECTS.serverUpdated]: 'server',
  [GUILDS_SUBJECTS.channelCreated]: 'channel',
  [GUILDS_SUBJECTS.channelUpdated]: 'channel',
  [GUILDS_SUBJECTS.channelDeleted]: 'channel',
  [GUILDS_SUBJECTS.overrideUpdated]: 'channel',
  [GUILDS_SUBJECTS.overrideDeleted]: 'channel',
  // A member connected to a hidden voice channel sees it (as REST shows it to them).
  [VOICE_SUBJECTS.joined]: 'channel',
  [VOICE_SUBJECTS.left]: 'channel',
  [VOICE_SUBJECTS.moved]: 'channel',
};

/** Whether the event replaces a version (invalidate does something for it). */
export const outdatesAudiences = (subject: string): boolean => subject in OUTDATES;

/**
 * Who receives each event: a channel's events go to the members who may VIEW_CHANNEL it now (asked
 * of guilds, which applies the permission function of REST), server events to its members, DM and
 * friend events to the people concerned.
 *
 * Viewer and member lists are cached per replica and checked against versions in Redis: every
 * event that can change who sees what (roles, overrides, membership, bans, channels) replaces the
 * version of its server or channel before anything after it is delivered, so every replica asks
 * guilds again and a member who lost access receives nothing more.
 */
export function createAudience(options: { ask: Ask; redis: Redis; prefix: string; now?: () => number }) {
  const { ask, redis, prefix } = options;
  const now = options.now ?? Date.now;
  const cache = new Map<string, Cached>();
  const serverKey = (serverId: string) => `${prefix}v:${serverId}`;
  const channelKey = (channelId: string) => `${prefix}vc:${channelId}`;

  async function versions(serverId: string, channelId?: string): Promise<[string, string]> {
    const [s, c] = await redis.mget(serverKey(serverId), channelKey(channelId ?? '-'));
    return [s ?? '', c ?? ''];
  }

  function remember(key: string, entry: Cached) {
    setBounded(cache, key, entry, MAX_CACHED);
  }

  async function cached(
    key: string,
    serverId: string,
    channelId: string | undefined,
    load: () => Promise<string[]>,
    fresh: boolean,
  ): Promise<Recipients> {
    const hit = cache.get(key);
    if (!fresh && hit && now() - hit.at < CACHE_TTL_MS) {
      const guard: VersionGuard = [
        [serverKey(serverId), hit.serverVersion],
        [channelKey(channelId ?? '-'), hit.channelVersion],
      ];
      return { userIds: hit.userIds, guard };
    }
    // Versions read before asking: a change that lands meanwhile leaves this entry outdated, not wrong for ever.
    const [serverVersion, channelVersion] = await versions(serverId, channelId);
    const userIds = await load();
    remember(key, { serverVersion, channelVersion, serverId, userIds, at: now() });
    return { userIds };
  }

  /** Members who may view the channel now; empty for a channel that no longer exists. */
  async function viewers(channelId: string, serverId: string | undefined, fresh: boolean): Promise<Recipients> {
    const load = async () => {
      try {
        return (await ask(ChannelViewersRpc, { channelId })).userIds;
      } catch (err) {
        if ((err as { status?: number }).status === 404) return [];
        throw err;
      }
    };
    const known = serverId ?? cache.get(`c:${channelId}`)?.serverId;
    return known ? cached(`c:${channelId}`, known, channelId, load, fresh) : { userIds: await load() };
  }

  async function members(serverId: string, fresh: boolean, permission?: bigint): Promise<Recipients> {
    const mask = permission === undefined ? undefined : toMask(permission);
    return cached(
      `s:${serverId}:${mask ?? ''}`,
      serverId,
      undefined,
      async () => {
        try {
          return (await ask(ServerMembersRpc, { serverId, permission: mask })).userIds;
        } catch (err) {
          if ((err as { status?: number }).status === 404) return [];
          throw err;
        }
      },
      fresh,
    );
  }

  /** Friends and co-members, the user not among them: who sees presence and public profile changes. */
  async function acquaintances(userId: string): Promise<string[]> {
    const [friends, comembers] = await Promise.all([ask(UserFriendsRpc, { userId }), ask(UserComembersRpc, { userId })]);
    return [...new Set([...friends.userIds, ...comembers.userIds])];
  }

  /**
   * Whoever may fetch the user's key bundles (social's visibility rule: friends, people in a
   * conversation or a server with them, never across a block), and the user's own other devices.
   */
  async function keyContacts(userId: string): Promise<string[]> {
    const [contacts, comembers] = await Promise.all([ask(UserContactsRpc, { userId }), ask(UserComembersRpc, { userId })]);
    const blocked = new Set(contacts.blockedIds);
    return [...new Set([userId, ...contacts.userIds, ...comembers.userIds])].filter((id) => !blocked.has(id));
  }

  const bump = (key: string) => redis.set(key, `${now()}-${Math.random().toString(36).slice(2)}`, 'EX', VERSION_TTL_S);

  /** Replaces the versions an event makes outdated; runs before the event's own audience is computed. */
  async function invalidate(subject: string, data: Data): Promise<void> {
    const outdated = OUTDATES[subject];
    if (outdated === 'server') await bump(serverKey(data.serverId ?? data.id));
    if (outdated === 'channel') await bump(channelKey(data.channelId ?? data.id));
    if (subject === VOICE_SUBJECTS.moved) await bump(channelKey(data.fromChannelId));
  }

  const plus = async (list: Promise<Recipients>, ...more: string[]): Promise<Recipients> => {
    const { userIds, guard } = await list;
    return { userIds: [...userIds, ...more], ...(guard && { guard }) };
  };
  const just = async (userIds: string[] | Promise<string[]>): Promise<Recipients> => ({ userIds: await userIds });

  /**
   * The users who receive the dispatch of this event; `fresh` after a delivery refused a cached
   * list whose versions had moved.
   */
  async function recipients(subject: string, data: Data, options: { fresh?: boolean } = {}): Promise<Recipients> {
    const fresh = options.fresh ?? false;
    switch (subject) {
      case MESSAGES_SUBJECTS.messageCreated:
      case MESSAGES_SUBJECTS.messageUpdated:
      case MESSAGES_SUBJECTS.messageDeleted:
      case MESSAGES_SUBJECTS.reactionAdded:
      case MESSAGES_SUBJECTS.reactionRemoved:
      case MESSAGES_SUBJECTS.pinAdded:
      case MESSAGES_SUBJECTS.pinRemoved:
        return viewers(data.channelId, data.serverId, fresh);
      case GUILDS_SUBJECTS.channelCreated:
      case GUILDS_SUBJECTS.channelUpdated:
        return viewers(data.id, data.serverId, fresh);
      case GUILDS_SUBJECTS.overrideUpdated:
      case GUILDS_SUBJECTS.overrideDeleted:
        return viewers(data.channelId, undefined, fresh);
      case MUSIC_SUBJECTS.playerUpdated:
        return viewers(data.player.channelId, data.player.serverId, fresh);
      case REALTIME_SUBJECTS.channelTyping: {
        const { userIds, guard } = await viewers(data.channelId, data.serverId, fresh);
        return { userIds: userIds.filter((id) => id !== data.userId), ...(guard && { guard }) };
      }
      case GUILDS_SUBJECTS.serverCreated:
        return just([data.ownerId]);
      case GUILDS_SUBJECTS.serverUpdated:
        return members(data.id, fresh);
      case GUILDS_SUBJECTS.serverDeleted:
        return just(data.memberIds ?? []);
      // Only those who could see it learn its id; events from before `viewerIds` go to every member.
      case GUILDS_SUBJECTS.channelDeleted:
        return data.viewerIds ? just(data.viewerIds) : members(data.serverId, fresh);
      case GUILDS_SUBJECTS.categoryCreated:
      case GUILDS_SUBJECTS.categoryUpdated:
      case GUILDS_SUBJECTS.categoryDeleted:
      case GUILDS_SUBJECTS.roleCreated:
      case GUILDS_SUBJECTS.roleUpdated:
      case GUILDS_SUBJECTS.roleShifted:
      case GUILDS_SUBJECTS.roleDeleted:
      case GUILDS_SUBJECTS.memberJoined:
      case GUILDS_SUBJECTS.memberUpdated:
        return members(data.serverId, fresh);
      // As REST lists voice states: to those who see the channel (a move: where the user went; see
      // leftBehind for where they came from), and the user.
      case VOICE_SUBJECTS.joined:
      case VOICE_SUBJECTS.moved:
      case VOICE_SUBJECTS.updated:
        return plus(viewers(data.channelId, data.serverId, fresh), data.userId);
      // A state that ended with its channel carries who viewed it: asked now, a deleted channel has none.
      case VOICE_SUBJECTS.left:
        return plus(data.viewerIds ? just(data.viewerIds) : viewers(data.channelId, data.serverId, fresh), data.userId);
      // The member who left, was kicked or banned is told once; nothing of the server follows.
      case GUILDS_SUBJECTS.memberLeft:
        return plus(members(data.serverId, fresh), data.userId);
      case GUILDS_SUBJECTS.memberBanned:
      case GUILDS_SUBJECTS.memberUnbanned:
        return members(data.serverId, fresh, Permission.BAN_MEMBERS);
      case GUILDS_SUBJECTS.joinRequestCreated:
      case GUILDS_SUBJECTS.joinRequestReviewed:
        return plus(members(data.serverId, fresh, Permission.MANAGE_GUILD), data.userId);
      case SOCIAL_SUBJECTS.conversationCreated:
      case SOCIAL_SUBJECTS.dmCreated:
      case SOCIAL_SUBJECTS.dmUpdated:
      case SOCIAL_SUBJECTS.dmDeleted:
      case SOCIAL_SUBJECTS.dmReactionAdded:
      case SOCIAL_SUBJECTS.dmReactionRemoved:
      // Social leaves out of a call's participantIds whoever blocked the one acting or the caller.
      case CALL_SUBJECTS.created:
      case CALL_SUBJECTS.updated:
      case CALL_SUBJECTS.ended:
        return just(data.participantIds);
      case REALTIME_SUBJECTS.conversationTyping:
        return just(data.participantIds.filter((id: string) => id !== data.userId));
      // Those who remain, and the one who left (every session of theirs): the group leaves their list.
      case SOCIAL_SUBJECTS.conversationLeft:
        return just([...data.participantIds, data.userId]);
      // Friend and block events are not here: each side gets its own record (personal.ts).
      // Key changes go to whoever may fetch the user's bundles.
      case KEYS_SUBJECTS.keysChanged:
        return just(keyContacts(data.userId));
      // How many one-time keys the owner's devices have left is the owner's alone.
      case KEYS_SUBJECTS.keysLow:
        return just([data.userId]);
      // The user's own sessions get the whole account instead (auth.account.updated).
      case AUTH_SUBJECTS.userUpdated:
        return just(acquaintances(data.id));
      // A read state and the feed (its entries, its read mark) are the user's own: every session of theirs, nobody else.
      case READ_STATE_SUBJECTS.readStateUpdated:
      case READ_STATE_SUBJECTS.notificationsAcked:
        return just([data.userId]);
      case READ_STATE_SUBJECTS.notificationCreated:
      case READ_STATE_SUBJECTS.notificationsDeleted:
        return just(data.userIds);
      default:
        return just([]);
    }
  }

  /**
   * A move (`guilds.voice.moved`) as seen from the channel left: who sees that channel but not the
   * one the user went to. They are told the user left, never where to. A move that emptied and
   * deleted a temporary channel carries who viewed it (`fromViewerIds`).
   */
  async function leftBehind(data: Data, options: { fresh?: boolean } = {}): Promise<Recipients> {
    const fresh = options.fresh ?? false;
    const [from, to] = await Promise.all([
      data.fromViewerIds ? just(data.fromViewerIds) : viewers(data.fromChannelId, data.serverId, fresh),
      viewers(data.channelId, data.serverId, fresh),
    ]);
    const told = new Set([...to.userIds, data.userId]);
    const guard = [...(from.guard ?? []), ...(to.guard ?? [])];
    return { userIds: from.userIds.filter((id) => !told.has(id)), ...(guard.length > 0 && { guard }) };
  }

  return { invalidate, recipients, leftBehind, acquaintances };
}

export type Audience = ReturnType<typeof createAudience>;
