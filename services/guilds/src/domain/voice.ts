import type { Channel } from '@chat/contracts';
import {
  GUILDS_EVENTS,
  isId,
  type MediaGrant,
  Permission,
  VOICE_EVENTS,
  type VoiceJoinReply,
  type VoiceLeftReason,
  type VoiceModerationBody,
  type VoiceState,
  type VoiceStateBody,
} from '@chat/contracts';
import {
  AppError,
  badRequest,
  enqueueEvent,
  forbidden,
  type MediaPermissions,
  type MediaRooms,
  notFound,
  type Occupant,
  type Pool,
  type Queryable,
  samePermissions,
  withRetryingTx,
  withTx,
} from '@chat/kit';
import { v7 as uuidv7 } from 'uuid';
import type { z } from 'zod';
import { deleteChannel, insertChannel } from '../db/channels.ts';
import { insertOverrides, listOverrides } from '../db/overrides.ts';
import { findServer, toServer } from '../db/servers.ts';
import {
  channelHasStates,
  channelsWithoutLiveStates,
  claimIdleStates,
  countOthersIn,
  deleteExpiredStates,
  deleteVoiceState,
  deleteVoiceStateIn,
  deleteVoiceStatesOf,
  findVoiceStateForUpdate,
  isLiveIn,
  listLiveStates,
  lockChannels,
  lockUserVoice,
  markTemporary,
  memberName,
  moveVoiceState,
  refreshVoiceState,
  type StoredVoiceState,
  setSelfFlags,
  setServerFlags,
  upsertVoiceState,
  type VoiceScope,
  voiceChannelsAmong,
  voiceChannelsWithStates,
} from '../db/voice-states.ts';
import { type ChannelAccess, channelAccess, loadChannelAccess, memberAccess, requirePermission, visibleChannels } from './access.ts';
import { channelViewers } from './audience.ts';
import { groupBy } from './channel-list.ts';
import type { Ctx, Domain } from './context.ts';
import { closeChannelGap, lockLayout } from './layout.ts';
import { has } from './permissions.ts';
import { temporaryChannelName } from './temporary-channels.ts';

/**
 * Voice states: one per user, in one voice channel. Every change runs in one transaction that
 * takes, in this order, the user's advisory lock, their state row, then the channels involved in
 * id order; so replicas serialise on PostgreSQL, a channel's limit holds under concurrent joins, and
 * a temporary channel is deleted exactly when its last state goes.
 */

export const DEFAULT_VOICE_STATE_TTL_SECONDS = 60;
const ttlOf = (d: Domain) => d.voiceStateTtlSeconds ?? DEFAULT_VOICE_STATE_TTL_SECONDS;

const EVENTS = { ...GUILDS_EVENTS, ...VOICE_EVENTS };
type Subject = keyof typeof EVENTS;

/** Outbox write for the voice and channel events; the sweeper has no request, hence no request id. */
function emitEvent<S extends Subject>(tx: Queryable, requestId: string | undefined, subject: S, data: z.input<(typeof EVENTS)[S]>) {
  return enqueueEvent(tx, subject, data, requestId);
}

/** The stored state as the public record, if it still counts. */
function counting(stored: StoredVoiceState | undefined): VoiceState | undefined {
  if (!stored || stored.endedReason !== null) return undefined;
  const { endedReason: _counts, ...state } = stored;
  return state;
}

const notConnected = () => new AppError(404, 'You are not connected to a voice channel');

/** A voice channel the user can see (404 otherwise); a text channel is a 400. */
async function voiceChannelAccess(tx: Queryable, channelId: string, userId: string): Promise<ChannelAccess> {
  const access = await channelAccess(tx, channelId, userId);
  if (access.channel.channelType !== 'voice') throw badRequest('Only voice channels can be joined');
  return access;
}

const isJoinToCreate = (access: ChannelAccess) => access.server.jtc_channel_id === access.channel.id;

export async function joinVoice(d: Domain, ctx: Ctx, channelId: string): Promise<VoiceJoinReply> {
  // Checked first: a join that cannot hand out its grant must not happen at all.
  if (!d.issueMediaGrant) throw new AppError(503, 'Voice media is not configured');
  const joined = await enterVoice(d, ctx, channelId);
  return { ...joined, grant: await grantFor(d, joined.state) };
}

/**
 * A fresh grant for the room of the caller's voice state as it is now (a move changes the room, a
 * moderator's mute or deafen what it allows); none after a disconnect (404).
 */
export async function voiceGrant(d: Domain, ctx: Ctx): Promise<MediaGrant> {
  const state = counting(await findVoiceStateForUpdate(d.pool, ctx.userId));
  if (!state) throw notConnected();
  return grantFor(d, state);
}

/**
 * The media grant of the state's room: publishing (speaking) only with SPEAK there now and not
 * server-muted, and video and screen share only with STREAM too; subscribing (hearing) unless
 * server-deafened. The state decides the room, not VIEW_CHANNEL: a moderator may move a member into
 * a channel they could not join themselves (a "jail" channel), and they are connected there; without
 * VIEW_CHANNEL they hold no SPEAK in it.
 */
async function grantFor(d: Domain, state: VoiceState): Promise<MediaGrant> {
  if (!d.issueMediaGrant) throw new AppError(503, 'Voice media is not configured');
  const permissions = await mediaPermissions(d.pool, state);
  // Deleted meanwhile: the state went with it (ON DELETE CASCADE).
  if (!permissions) throw notConnected();
  return d.issueMediaGrant({ room: state.channelId, identity: state.userId, ...permissions });
}

/** What the state's holder may do in its room (see grantFor); undefined when the channel is gone. */
async function mediaPermissions(db: Queryable, state: VoiceState): Promise<MediaPermissions | undefined> {
  const access = await loadChannelAccess(db, state.channelId, state.userId);
  if (!access) return undefined;
  const mask = access.channelPermissions;
  return {
    canPublish: has(mask, Permission.SPEAK) && !state.serverMute,
    // Unnamed, LiveKit would let a publisher send every source: STREAM would not be enforced.
    ...(!has(mask, Permission.STREAM) && { canPublishSources: ['microphone'] }),
    canSubscribe: !state.serverDeaf,
  };
}

/**
 * Brings the media server in line with the user's voice state, for one room: a grant only lets its
 * holder connect, and once connected they stay, whatever happens to their state. Not live in the
 * room any more (left, switched, moved, disconnected, kicked, banned, the channel deleted): they
 * are taken out of it. Still there: they may do what a grant made now would allow (a server mute
 * or deafen, and lifting it). The state is read under the user's voice lock, held until the
 * caller's transaction ends: a join racing this waits, so a member who joins the room again is
 * never taken out by the event of their earlier leave. A room whose channel is gone (deleted, or
 * its server) is closed: nobody may be in it. Answers whether it took them out.
 */
export async function syncVoiceMedia(rooms: MediaRooms, tx: Queryable, userId: string, room: string): Promise<boolean> {
  await lockUserVoice(tx, userId);
  const state = counting(await findVoiceStateForUpdate(tx, userId));
  const permissions = state?.channelId === room ? await mediaPermissions(tx, state) : undefined;
  if (permissions) await rooms.allow(room, userId, permissions);
  else if ((await voiceChannelsAmong(tx, [room])).has(room)) await rooms.remove(room, userId);
  else await rooms.close(room);
  return !permissions;
}

export type { VoiceScope };

/**
 * Brings the rooms in line with a change of access (a role's permissions, a member's roles, a
 * channel override): every member live in voice within `scope` and connected to the room may do
 * from now on what a grant made now would allow. Losing SPEAK or STREAM stops their publishing at
 * once, not at their next grant; getting it back lets them publish again. The media server is asked
 * once per room who is there and what they may do, and told only of those whose rights changed (a
 * role renamed changes nobody's); each of those in its own transaction, under their own voice lock
 * (see syncVoiceMedia), so no join waits on the others' media calls.
 */
export async function syncVoiceAccess(rooms: MediaRooms, pool: Pool, scope: VoiceScope): Promise<void> {
  const byRoom = groupBy(await listLiveStates(pool, scope), (s) => s.channelId);
  if (byRoom.size === 0) return;
  for (const { room, occupants } of await rooms.occupied({ rooms: [...byRoom.keys()] })) {
    const states = byUser(byRoom.get(room) ?? []);
    await checkVoiceRoom(
      rooms,
      pool,
      room,
      occupants.filter((o) => states.has(o.identity)),
      states,
    );
  }
}

const byUser = (states: VoiceState[]) => new Map(states.map((s) => [s.userId, s]));

/**
 * Brings the voice rooms in line with the voice states: whoever LiveKit has in a room without a
 * live state in its channel is taken out, and whoever may do more there than a grant made now would
 * allow (or less) gets what it allows. The events do it at once (syncVoiceMedia); this catches a
 * client that connects again afterwards with a token from before the change (a kick, a ban, a
 * disconnect, a mute, SPEAK taken away): LiveKit cannot revoke a token, and refreshes a connected
 * participant's every 5 minutes for 10. Only rooms of this service's voice channels are looked at
 * (a call's room is social's), and only identities that are user ids (ours are); each is checked
 * again under the user's voice lock, as an event would be. With `recentChanges`, only the rooms
 * this replica changed lately (see MediaRooms.occupied), which are all voice rooms: one whose
 * channel is gone is closed again. Answers how many participants it brought into line.
 */
export async function checkVoiceRooms(rooms: MediaRooms, pool: Pool, options?: { recentChanges?: boolean }): Promise<number> {
  const occupied = (await rooms.occupied(options)).filter(({ room }) => isId(room));
  const voice = await voiceChannelsAmong(
    pool,
    occupied.map((o) => o.room),
  );
  // The live states of every voice room at once, not a query per room.
  const byRoom = voice.size
    ? groupBy(await listLiveStates(pool, { channelIds: [...voice] }), (s) => s.channelId)
    : new Map<string, VoiceState[]>();
  let corrected = 0;
  for (const { room, occupants } of occupied) {
    if (voice.has(room)) {
      corrected += await checkVoiceRoom(rooms, pool, room, occupants, byUser(byRoom.get(room) ?? []));
    } else if (options?.recentChanges) {
      await rooms.close(room);
      corrected += occupants.length;
    }
  }
  return corrected;
}

/**
 * One voice room of checkVoiceRooms and syncVoiceAccess, given the live states there by user:
 * answers how many of its occupants it brought into line.
 */
async function checkVoiceRoom(
  rooms: MediaRooms,
  pool: Pool,
  room: string,
  occupants: Occupant[],
  states: Map<string, VoiceState>,
): Promise<number> {
  let corrected = 0;
  for (const { identity, permissions } of occupants.filter((o) => isId(o.identity))) {
    const state = states.get(identity);
    const due = state && (await mediaPermissions(pool, state));
    if (due && samePermissions(due, permissions)) continue;
    await withTx(pool, (tx) => syncVoiceMedia(rooms, tx, identity, room));
    corrected++;
  }
  return corrected;
}

function enterVoice(d: Domain, ctx: Ctx, channelId: string): Promise<Omit<VoiceJoinReply, 'grant'>> {
  return withRetryingTx(d.pool, async (tx) => {
    const access = await voiceChannelAccess(tx, channelId, ctx.userId);
    requirePermission(access.channelPermissions, Permission.CONNECT, 'CONNECT');
    await lockUserVoice(tx, ctx.userId);
    const previous = await findVoiceStateForUpdate(tx, ctx.userId);
    const locked = await lockChannels(tx, [channelId, ...(previous ? [previous.channelId] : [])]);
    // The locked row, not the one read before the lock: a concurrent PATCH may have locked or limited it.
    const channel = locked.get(channelId);
    if (!channel) throw notFound('Channel');
    if (isJoinToCreate(access)) {
      // Its lock is the one rule that applies: nobody stays in it, so its limit never fills.
      assertAdmitted(channel, access.channelPermissions, ctx.userId, 0);
      const temporary = await createTemporaryChannel(tx, ctx, access);
      return { state: await enter(d, tx, ctx, previous, temporary), channel: temporary };
    }
    if (previous?.channelId === channelId && previous.endedReason === null) {
      return { state: (await refreshVoiceState(tx, ctx.userId, ttlOf(d)))!, channel };
    }
    assertAdmitted(channel, access.channelPermissions, ctx.userId, await countOthersIn(tx, channelId, ctx.userId));
    return { state: await enter(d, tx, ctx, previous, channel), channel };
  });
}

/** A locked or full channel admits only its owner and those who may move members. */
function assertAdmitted(channel: Channel, mask: bigint, userId: string, othersInside: number): void {
  if (channel.ownerId === userId || has(mask, Permission.MOVE_MEMBERS)) return;
  if (channel.isLocked) throw forbidden('This voice channel is locked');
  if (channel.userLimit > 0 && othersInside >= channel.userLimit) throw forbidden('This voice channel is full');
}

/**
 * Puts the caller in `channel`, ending the state they had elsewhere (its channels are already
 * locked). The row moves first, so that whether the previous channel is left empty is known when its
 * guilds.voice.left is written, before guilds.voice.joined.
 */
async function enter(d: Domain, tx: Queryable, ctx: Ctx, previous: StoredVoiceState | undefined, channel: Channel): Promise<VoiceState> {
  const state = await upsertVoiceState(tx, { userId: ctx.userId, serverId: channel.serverId, channelId: channel.id, ttlSeconds: ttlOf(d) });
  const emptied = previous && (await emptiedTemporary(tx, previous.channelId));
  if (previous) {
    const channelEmptied = await isLeftEmpty(tx, previous.channelId);
    await emitLeft(tx, ctx.requestId, previous, previous.endedReason ?? 'switched', { channelEmptied, viewerIds: emptied?.viewerIds });
  }
  await emitEvent(tx, ctx.requestId, 'guilds.voice.joined', state);
  if (emptied) await deleteEmptied(tx, ctx.requestId, emptied);
  return state;
}

/**
 * `channelEmptied`: nobody is connected to the channel any more (channelsLeftEmpty); `viewerIds`
 * when the channel goes in the same transaction: the gateway can no longer ask who views it.
 */
function emitLeft(
  tx: Queryable,
  requestId: string | undefined,
  state: VoiceState,
  reason: VoiceLeftReason,
  { channelEmptied, viewerIds }: { channelEmptied: boolean; viewerIds?: string[] | undefined },
) {
  const { userId, serverId, channelId } = state;
  return emitEvent(tx, requestId, 'guilds.voice.left', {
    userId,
    serverId,
    channelId,
    reason,
    ...(viewerIds && { viewerIds }),
    channelEmptied,
  });
}

/** Ends a state already deleted: its event, and the temporary channel it leaves empty deleted. */
async function endState(tx: Queryable, requestId: string | undefined, state: VoiceState, reason: VoiceLeftReason): Promise<void> {
  const emptied = await emptiedTemporary(tx, state.channelId);
  await emitLeft(tx, requestId, state, reason, { channelEmptied: await isLeftEmpty(tx, state.channelId), viewerIds: emptied?.viewerIds });
  if (emptied) await deleteEmptied(tx, requestId, emptied);
}

/**
 * The channels among these that nobody is connected to any more (no live state), asked after the
 * states that ended here went, under the channels' row locks (taken here, in id order, unless
 * held): every join and move into a channel takes that lock before its state lands, so of two last
 * states ending at once the second sees the first gone (the first still sees the second), and a join
 * racing the last end either lands before the question (not empty) or after it (empty a moment).
 * Music pauses the channel's player on it.
 */
async function channelsLeftEmpty(tx: Queryable, channelIds: readonly string[]): Promise<Set<string>> {
  await lockChannels(tx, channelIds);
  return channelsWithoutLiveStates(tx, channelIds);
}

const isLeftEmpty = async (tx: Queryable, channelId: string) => (await channelsLeftEmpty(tx, [channelId])).has(channelId);

/**
 * The caller's own temporary channel, in the join-to-create channel's category, named after them,
 * with a copy of its overrides: who could not see or join the join-to-create channel cannot see or
 * join what it makes either. The creator needs none of their own: the same overrides let them in,
 * and owning the channel lets them edit it (temporary-channels.ts) and pass its lock.
 */
async function createTemporaryChannel(tx: Queryable, ctx: Ctx, jtc: ChannelAccess): Promise<Channel> {
  const name = temporaryChannelName(await memberName(tx, jtc.server.id, ctx.userId));
  await lockLayout(tx, jtc.server.id);
  const inserted = await insertChannel(tx, {
    id: uuidv7(),
    serverId: jtc.server.id,
    categoryId: jtc.channel.categoryId,
    name,
    channelType: 'voice',
    topic: null,
  });
  const channel = await markTemporary(tx, inserted.id, ctx.userId);
  await emitEvent(tx, ctx.requestId, 'guilds.channel.created', channel);
  await copyOverrides(tx, ctx, jtc.channel.id, channel.id);
  return channel;
}

/** The overrides of one channel given to a new one, each with its guilds.override.updated (as a PUT writes it). */
async function copyOverrides(tx: Queryable, ctx: Ctx, fromChannelId: string, toChannelId: string): Promise<void> {
  const source = await listOverrides(tx, fromChannelId);
  const copies = await insertOverrides(
    tx,
    source.map((o) => ({
      id: uuidv7(),
      channelId: toChannelId,
      roleId: o.roleId,
      userId: o.userId,
      allow: BigInt(o.allowBits),
      deny: BigInt(o.denyBits),
    })),
  );
  for (const override of copies) await emitEvent(tx, ctx.requestId, 'guilds.override.updated', override);
}

/** A temporary channel nobody is in any more, and who viewed it: what its deletion and the events before it need. */
type EmptiedChannel = { channel: Channel; viewerIds: string[] };

/**
 * The channel, if it is a temporary one nobody is in any more, with who views it, asked before it
 * goes (the events of the states that emptied it carry them). Under its row lock, so a join that is
 * queued on the same lock either lands first (and keeps it) or finds it gone (404).
 */
async function emptiedTemporary(tx: Queryable, channelId: string): Promise<EmptiedChannel | undefined> {
  const channel = (await lockChannels(tx, [channelId])).get(channelId);
  if (!channel?.isTemporary || (await channelHasStates(tx, channelId))) return undefined;
  await lockLayout(tx, channel.serverId);
  return { channel, viewerIds: (await channelViewers(tx, channelId)).userIds };
}

/** Deletes an emptied temporary channel, telling who viewed it and, when the server pointed at it, the members. */
async function deleteEmptied(tx: Queryable, requestId: string | undefined, { channel, viewerIds }: EmptiedChannel): Promise<void> {
  const server = await findServer(tx, channel.serverId);
  await deleteChannel(tx, channel.id);
  await emitEvent(tx, requestId, 'guilds.channel.deleted', { id: channel.id, serverId: channel.serverId, viewerIds });
  await closeChannelGap(tx, requestId, channel.serverId, channel.categoryId);
  // Pointers set before temporary channels were refused as server channels: the foreign keys cleared them.
  if (server && [server.entrance_channel_id, server.afk_channel_id, server.jtc_channel_id].includes(channel.id)) {
    await emitEvent(tx, requestId, 'guilds.server.updated', toServer((await findServer(tx, channel.serverId))!));
  }
}

/** Leaves voice; nothing happens when the caller is not connected. */
export function leaveVoice(d: Domain, ctx: Ctx): Promise<void> {
  return withRetryingTx(d.pool, async (tx) => {
    await lockUserVoice(tx, ctx.userId);
    const ended = await deleteVoiceState(tx, ctx.userId);
    if (ended) await endState(tx, ctx.requestId, ended, 'left');
  });
}

/** Keeps the state alive; `speaking` also counts as activity for the AFK timeout. */
export async function heartbeat(d: Domain, ctx: Ctx, speaking = false): Promise<VoiceState> {
  const state = await refreshVoiceState(d.pool, ctx.userId, ttlOf(d), speaking);
  if (!state) throw notConnected();
  return state;
}

export function updateVoiceState(d: Domain, ctx: Ctx, patch: VoiceStateBody): Promise<VoiceState> {
  return withRetryingTx(d.pool, async (tx) => {
    await lockUserVoice(tx, ctx.userId);
    const current = counting(await findVoiceStateForUpdate(tx, ctx.userId));
    if (!current) throw notConnected();
    const flags = { selfMute: patch.selfMute ?? current.selfMute, selfDeaf: patch.selfDeaf ?? current.selfDeaf };
    if (flags.selfMute === current.selfMute && flags.selfDeaf === current.selfDeaf) return current;
    const state = await setSelfFlags(tx, ctx.userId, flags);
    await emitEvent(tx, ctx.requestId, 'guilds.voice.updated', state);
    return state;
  });
}

const memberNotConnected = () => badRequest('That member is not connected to a voice channel of this server');

/**
 * The caller's permissions in the channel a member is connected to. Someone in a channel hidden
 * from the caller is not connected as far as the caller may know (the voice-states list leaves them
 * out too): a 403 there would tell that they are, so the answer is the same 400 as for nobody.
 */
async function maskWhereConnected(tx: Queryable, state: VoiceState, callerId: string): Promise<bigint> {
  const mask = (await loadChannelAccess(tx, state.channelId, callerId))?.channelPermissions ?? 0n;
  if (!has(mask, Permission.VIEW_CHANNEL)) throw memberNotConnected();
  return mask;
}

/**
 * Moves a connected member to another voice channel of the same server (the AFK channel, say).
 * As in Discord: MOVE_MEMBERS where they are and where they go, and CONNECT where they go; a
 * locked or full target does not stop a move.
 */
export function moveMember(d: Domain, ctx: Ctx, body: { userId: string; channelId: string }): Promise<VoiceState> {
  return withRetryingTx(d.pool, async (tx) => {
    const target = await voiceChannelAccess(tx, body.channelId, ctx.userId);
    requirePermission(target.channelPermissions, Permission.MOVE_MEMBERS, 'MOVE_MEMBERS');
    requirePermission(target.channelPermissions, Permission.CONNECT, 'CONNECT');
    if (isJoinToCreate(target)) throw badRequest('Nobody stays in the join-to-create channel; move the member to another voice channel');
    await lockUserVoice(tx, body.userId);
    const current = counting(await findVoiceStateForUpdate(tx, body.userId));
    if (!current || current.serverId !== target.server.id) throw memberNotConnected();
    requirePermission(await maskWhereConnected(tx, current, ctx.userId), Permission.MOVE_MEMBERS, 'MOVE_MEMBERS');
    if (current.channelId === body.channelId) return current;
    const locked = await lockChannels(tx, [current.channelId, body.channelId]);
    if (!locked.has(body.channelId)) throw notFound('Channel');
    const state = await moveVoiceState(tx, body.userId, body.channelId);
    const emptied = await emptiedTemporary(tx, current.channelId);
    const from = { channelId: current.channelId, emptied: await isLeftEmpty(tx, current.channelId), deleted: emptied };
    // A moderator's move counts as activity (moveVoiceState resets it).
    await emitMoved(tx, ctx.requestId, state, from, ctx.userId);
    if (emptied) await deleteEmptied(tx, ctx.requestId, emptied);
    return state;
  });
}

/** The channel a move left: whether nobody is connected to it any more, and the temporary channel that goes with it. */
type LeftChannel = { channelId: string; emptied: boolean; deleted: EmptiedChannel | undefined };

/** `fromViewerIds` when the move emptied its temporary channel, which goes in the same transaction. */
function emitMoved(tx: Queryable, requestId: string | undefined, state: VoiceState, from: LeftChannel, movedBy: string | null) {
  const fromViewers = from.deleted && { fromViewerIds: from.deleted.viewerIds };
  const fromChannel = { fromChannelId: from.channelId, fromChannelEmptied: from.emptied };
  return emitEvent(tx, requestId, 'guilds.voice.moved', { ...state, ...fromChannel, movedBy, ...fromViewers });
}

/**
 * A connected member of the server, under their voice lock, and the caller's permissions in the
 * channel they are in: what a moderator's change needs (as Discord checks them: in that channel).
 */
async function moderatedState(tx: Queryable, ctx: Ctx, serverId: string, userId: string): Promise<{ state: VoiceState; mask: bigint }> {
  await memberAccess(tx, serverId, ctx.userId);
  await lockUserVoice(tx, userId);
  const state = counting(await findVoiceStateForUpdate(tx, userId));
  if (!state || state.serverId !== serverId) throw memberNotConnected();
  return { state, mask: await maskWhereConnected(tx, state, ctx.userId) };
}

/**
 * Server-mutes or server-deafens a connected member (MUTE_MEMBERS for `mute`, DEAFEN_MEMBERS for
 * `deaf`); a change is a guilds.voice.updated event, and their next grant follows it.
 */
export function moderateVoiceState(d: Domain, ctx: Ctx, serverId: string, userId: string, body: VoiceModerationBody): Promise<VoiceState> {
  return withRetryingTx(d.pool, async (tx) => {
    const { state, mask } = await moderatedState(tx, ctx, serverId, userId);
    if (body.mute !== undefined) requirePermission(mask, Permission.MUTE_MEMBERS, 'MUTE_MEMBERS');
    if (body.deaf !== undefined) requirePermission(mask, Permission.DEAFEN_MEMBERS, 'DEAFEN_MEMBERS');
    const flags = { serverMute: body.mute ?? state.serverMute, serverDeaf: body.deaf ?? state.serverDeaf };
    if (flags.serverMute === state.serverMute && flags.serverDeaf === state.serverDeaf) return state;
    const updated = await setServerFlags(tx, state, flags);
    await emitEvent(tx, ctx.requestId, 'guilds.voice.updated', updated);
    return updated;
  });
}

/**
 * Disconnects a member from voice (MOVE_MEMBERS in their channel, as Discord's move to no channel):
 * the state ends with guilds.voice.left `disconnected`, and an emptied temporary channel goes.
 */
export function disconnectMember(d: Domain, ctx: Ctx, serverId: string, userId: string): Promise<void> {
  return withRetryingTx(d.pool, async (tx) => {
    const { state, mask } = await moderatedState(tx, ctx, serverId, userId);
    requirePermission(mask, Permission.MOVE_MEMBERS, 'MOVE_MEMBERS');
    await deleteVoiceState(tx, userId);
    await endState(tx, ctx.requestId, state, 'disconnected');
  });
}

/**
 * The live states in the server's voice channels that the caller can see, and the caller's own
 * wherever it is: moved into a channel hidden from them, they are still connected there, and the
 * gateway tells them of their own state too.
 */
export async function listVoiceStates(d: Domain, ctx: Ctx, serverId: string): Promise<VoiceState[]> {
  const access = await memberAccess(d.pool, serverId, ctx.userId);
  const visible = new Set((await visibleChannels(d.pool, access)).map((c) => c.channel.id));
  return (await listLiveStates(d.pool, { serverId })).filter((s) => visible.has(s.channelId) || s.userId === ctx.userId);
}

/** Whether the user's live voice state is in this channel (what music asks before a control). */
export function isConnectedTo(d: Pick<Domain, 'pool'>, userId: string, channelId: string): Promise<boolean> {
  return isLiveIn(d.pool, userId, channelId);
}

/**
 * Ends the member's voice state in this server as they stop being a member (leave, kick, ban), in
 * the removal's own transaction: a rejoin starts with no state, and the others hear of it at once
 * (guilds.voice.left `removed`), not at the next sweep. An emptied temporary channel goes.
 */
export async function endVoiceOfRemovedMember(tx: Queryable, ctx: Ctx, serverId: string, userId: string): Promise<void> {
  await lockUserVoice(tx, userId);
  const ended = await deleteVoiceStateIn(tx, userId, serverId);
  if (ended) await endState(tx, ctx.requestId, ended, 'removed');
}

/**
 * Ends every state in a voice channel that DELETE /v1/channels/{id} is about to delete, in its
 * transaction and before the row goes (its cascade would end them unsaid): guilds.voice.left
 * `removed` (`expired` for one not yet swept), with `viewerIds`, asked by the caller before the
 * delete. The channel is locked first, as a join locks it: a join queued on it finds it gone (404).
 */
export async function endVoiceInDeletedChannel(tx: Queryable, ctx: Ctx, channel: Channel, viewerIds: string[]): Promise<void> {
  if (channel.channelType !== 'voice' || !(await lockChannels(tx, [channel.id])).has(channel.id)) return;
  for (const ended of await deleteVoiceStatesOf(tx, channel.id)) {
    const { endedReason, ...state } = ended;
    // Every state in it ended here: nobody is left connected.
    await emitLeft(tx, ctx.requestId, state, endedReason ?? 'removed', { channelEmptied: true, viewerIds });
  }
}

/**
 * Ends every voice state of a server that DELETE /v1/servers/{id} is about to delete, as
 * endVoiceInDeletedChannel does for each of its voice channels, told to all its members: its cascade
 * would end them unsaid, and nobody would take anyone out of the rooms.
 */
export async function endVoiceInDeletedServer(tx: Queryable, ctx: Ctx, serverId: string, memberIds: string[]): Promise<void> {
  for (const channel of await voiceChannelsWithStates(tx, serverId)) await endVoiceInDeletedChannel(tx, ctx, channel, memberIds);
}

/**
 * Ends up to `limit` states expired at `at` (no heartbeat in time), with their events, and deletes
 * the temporary channels they leave empty. Safe with several replicas: each takes rows the others
 * do not hold. Answers how many states it ended.
 */
export function sweepVoiceStates(d: Pick<Domain, 'pool'>, at = new Date(), limit = 100): Promise<number> {
  return withRetryingTx(d.pool, async (tx) => {
    const ended = await deleteExpiredStates(tx, at, limit);
    const emptied = await emptiedTemporaries(tx, ended);
    const leftEmpty = await channelsLeftEmpty(
      tx,
      ended.map((s) => s.channelId),
    );
    for (const state of ended) {
      const ending = { channelEmptied: leftEmpty.has(state.channelId), viewerIds: emptied.get(state.channelId)?.viewerIds };
      await emitLeft(tx, undefined, state, 'expired', ending);
    }
    for (const channel of emptied.values()) await deleteEmptied(tx, undefined, channel);
    return ended.length;
  });
}

/**
 * Moves up to `limit` members idle at `at` for longer than their server's afkTimeoutSeconds to its
 * AFK channel, with the same guilds.voice.moved event as a manual move (movedBy null), deleting a
 * temporary channel they leave empty. Never moves anyone out of the AFK channel. Each state is
 * claimed with SKIP LOCKED, so with several replicas a member is moved once. Answers how many moved.
 */
export function moveIdleMembersToAfk(d: Pick<Domain, 'pool'>, at = new Date(), limit = 100): Promise<number> {
  return withRetryingTx(d.pool, async (tx) => {
    const idle = await claimIdleStates(tx, at, limit);
    if (idle.length === 0) return 0;
    const locked = await lockChannels(
      tx,
      idle.flatMap((s) => [s.channelId, s.afkChannelId]),
    );
    const moves: { state: VoiceState; fromChannelId: string }[] = [];
    for (const { afkChannelId, ...state } of idle) {
      if (locked.has(afkChannelId))
        moves.push({ state: await moveVoiceState(tx, state.userId, afkChannelId), fromChannelId: state.channelId });
    }
    // Every move made before the events: only then is it known which channels they emptied.
    const emptied = await emptiedTemporaries(tx, idle);
    const leftEmpty = await channelsLeftEmpty(
      tx,
      moves.map((m) => m.fromChannelId),
    );
    for (const { state, fromChannelId } of moves) {
      const from = { channelId: fromChannelId, emptied: leftEmpty.has(fromChannelId), deleted: emptied.get(fromChannelId) };
      await emitMoved(tx, undefined, state, from, null);
    }
    for (const channel of emptied.values()) await deleteEmptied(tx, undefined, channel);
    return moves.length;
  });
}

/** The temporary channels these states were in that nobody is in any more, locked in id order. */
async function emptiedTemporaries(tx: Queryable, states: readonly { channelId: string }[]): Promise<Map<string, EmptiedChannel>> {
  const channelIds = [...new Set(states.map((s) => s.channelId))].sort();
  await lockChannels(tx, channelIds);
  const emptied = new Map<string, EmptiedChannel>();
  for (const channelId of channelIds) {
    const channel = await emptiedTemporary(tx, channelId);
    if (channel) emptied.set(channelId, channel);
  }
  return emptied;
}
