import { z } from 'zod';
import { Id, Timestamp } from './common.ts';
import { Channel } from './records.ts';
import { defineRpc } from './rpc.ts';

/** Schemas of the voice area (guilds): records, request bodies, events and RPC messages. */

// ---- Records ----

/**
 * Where a user is connected, as Discord's voice state: one per user across all servers. It lasts
 * until the user leaves, is moved, or stops sending heartbeats past `expiresAt`.
 */
export const VoiceState = z
  .object({
    userId: Id,
    serverId: Id,
    channelId: Id,
    selfMute: z.boolean(),
    selfDeaf: z.boolean(),
    /**
     * Muted or deafened by a moderator (MUTE_MEMBERS, DEAFEN_MEMBERS), as Discord's `mute` and
     * `deaf`: the next media grant may not publish, or not subscribe. They are the member's: kept
     * across moves, leaving voice and joining again, until a moderator lifts them (or the member
     * leaves the server).
     */
    serverMute: z.boolean(),
    serverDeaf: z.boolean(),
    joinedAt: Timestamp,
    /** A heartbeat (POST /v1/voice/heartbeat) before this time keeps the state; after it, it ends. */
    expiresAt: Timestamp,
  })
  .meta({ id: 'VoiceState' });
export type VoiceState = z.infer<typeof VoiceState>;

/**
 * What a client needs to carry audio: the media server's (LiveKit) url and an access token for one
 * room (the voice channel's or the call's id), identity the user id, expiring within minutes.
 */
export const MediaGrant = z.object({ url: z.string(), token: z.string() }).meta({ id: 'MediaGrant' });
export type MediaGrant = z.infer<typeof MediaGrant>;

/**
 * The answer to a join: the caller's state, the channel they landed in (a new one for
 * join-to-create), and the grant for its room (publishing only with SPEAK there).
 */
export const VoiceJoinReply = z.object({ state: VoiceState, channel: Channel, grant: MediaGrant }).meta({ id: 'VoiceJoinReply' });
export type VoiceJoinReply = z.infer<typeof VoiceJoinReply>;

// ---- Bodies ----

export const VoiceJoinBody = z.object({ channelId: Id });
export const VoiceMoveBody = z.object({ userId: Id, channelId: Id });
/**
 * A heartbeat may say whether the member is speaking; `true` counts as activity for the AFK timeout,
 * `false` (as absent) keeps the state alive only. Optional.
 */
export const VoiceHeartbeatBody = z.object({ speaking: z.boolean().optional() }).nullish();

/** A moderator's change of a member's voice state (Discord's `mute` and `deaf` of modify-member). */
export const VoiceModerationBody = z
  .object({ mute: z.boolean().optional(), deaf: z.boolean().optional() })
  .refine((b) => b.mute !== undefined || b.deaf !== undefined, { message: 'give mute or deaf' });
export type VoiceModerationBody = z.infer<typeof VoiceModerationBody>;

export const VoiceStateBody = z
  .object({ selfMute: z.boolean().optional(), selfDeaf: z.boolean().optional() })
  .refine((b) => b.selfMute !== undefined || b.selfDeaf !== undefined, { message: 'give selfMute or selfDeaf' });
export type VoiceStateBody = z.infer<typeof VoiceStateBody>;

// ---- Events (subject -> payload) ----

/**
 * Why a voice state ended: the user left, joined another channel, stopped heartbeating, is no
 * longer a member or their channel was deleted (`removed`), or a moderator disconnected them
 * (MOVE_MEMBERS).
 */
export const VoiceLeftReason = z.enum(['left', 'switched', 'expired', 'removed', 'disconnected']);
export type VoiceLeftReason = z.infer<typeof VoiceLeftReason>;

/**
 * Who could view a channel deleted in the same transaction, asked before it went: the gateway
 * cannot ask afterwards (a deleted channel has no viewers). Absent while the channel stays.
 */
const ViewersOfDeletedChannel = z.array(Id).optional();

/**
 * Whether the state's end left its channel with nobody connected (no live state in it), decided in
 * the end's transaction under the channel's row lock, which every join and move into the channel
 * takes before its state lands: of two last members leaving at once only the second says so, and a
 * join racing the last end lands either before it (false) or after it (true). Music pauses the
 * channel's player on it. Absent on events from before guilds said it (unknown).
 */
const ChannelEmptied = z.boolean().optional();

/**
 * `viewerIds`: who viewed the channel, when the state's end also deleted it (an emptied temporary
 * channel, a channel deleted with people in it). `channelEmptied`: nobody is connected to the
 * channel any more (see ChannelEmptied).
 */
export const VoiceLeftEventData = z.object({
  userId: Id,
  serverId: Id,
  channelId: Id,
  reason: VoiceLeftReason,
  viewerIds: ViewersOfDeletedChannel,
  channelEmptied: ChannelEmptied,
});
/**
 * `movedBy` is null when the server moved the member (to the AFK channel, after inactivity);
 * `fromViewerIds`: who viewed the channel left, when the move emptied and deleted it (a temporary
 * channel); `fromChannelEmptied`: nobody is connected to the channel left any more (see ChannelEmptied).
 */
export const VoiceMovedEventData = VoiceState.extend({
  fromChannelId: Id,
  movedBy: Id.nullable(),
  fromViewerIds: ViewersOfDeletedChannel,
  fromChannelEmptied: ChannelEmptied,
});

export const VOICE_SUBJECTS = {
  joined: 'guilds.voice.joined',
  left: 'guilds.voice.left',
  moved: 'guilds.voice.moved',
  updated: 'guilds.voice.updated',
} as const;

/** Payload schema of each voice event subject (stream GUILDS). */
export const VOICE_EVENTS = {
  [VOICE_SUBJECTS.joined]: VoiceState,
  [VOICE_SUBJECTS.left]: VoiceLeftEventData,
  [VOICE_SUBJECTS.moved]: VoiceMovedEventData,
  [VOICE_SUBJECTS.updated]: VoiceState,
} as const;

// ---- Request/reply ----

/**
 * `rpc.guilds.voice.access`: may this user control things in this voice channel? Music asks it
 * before every control. Answers 404 for an unknown channel or one the user cannot see.
 */
export const VoiceAccessRequest = z.object({ channelId: Id, userId: Id });
export const VoiceAccessReply = z.object({
  channel: z.object({
    id: Id,
    serverId: Id,
    channelType: z.enum(['text', 'voice']),
    ownerId: Id.nullable(),
    musicLocked: z.boolean(),
  }),
  isMember: z.boolean(),
  /** The user's voice state is in this channel now (and has not expired). */
  inChannel: z.boolean(),
  /** MANAGE_CHANNELS in this channel (owners and administrators included). */
  canManageChannel: z.boolean(),
  /** Holds one of the server's DJ roles (djRoleIds): controls music in musicLocked channels. */
  isDj: z.boolean(),
});
export type VoiceAccessReply = z.infer<typeof VoiceAccessReply>;

export const VOICE_RPC = { access: 'rpc.guilds.voice.access' } as const;
export const VoiceAccessRpc = defineRpc(VOICE_RPC.access, VoiceAccessRequest, VoiceAccessReply);
