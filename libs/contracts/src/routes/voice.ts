import { z } from 'zod';
import { MemberParams, ServerParams } from '../guilds.ts';
import { defineRoute } from '../route.ts';
import {
  MediaGrant,
  VoiceHeartbeatBody,
  VoiceJoinBody,
  VoiceJoinReply,
  VoiceModerationBody,
  VoiceMoveBody,
  VoiceState,
  VoiceStateBody,
} from '../voice.ts';

/**
 * Voice states (guilds service): who is connected to which voice channel. Paths follow DESIGN.md's
 * route map. A state lasts while its client heartbeats; joining the server's jtcChannelId creates
 * a temporary channel owned by the caller.
 */

const g = 'guilds' as const;
const NOT_CONNECTED = { 404: 'The caller is not in a voice channel' };

export const voiceRoutes = {
  joinVoice: defineRoute({
    method: 'POST',
    path: '/v1/voice/join',
    service: g,
    summary:
      "Connect to a voice channel (leaving any other; CONNECT). The server's join-to-create channel creates a temporary channel owned by the caller",
    body: VoiceJoinBody,
    status: 200,
    response: VoiceJoinReply,
    errors: {
      400: 'Invalid input, or a text channel',
      403: 'Missing CONNECT, or the channel is locked or full (MOVE_MEMBERS and the channel owner pass)',
      404: 'Unknown channel, or not visible to the caller',
    },
  }),
  voiceGrant: defineRoute({
    method: 'POST',
    path: '/v1/voice/grant',
    service: g,
    summary:
      "A fresh media grant for the caller's current voice channel, as the voice state says now (after a move, the new room; publishing only with SPEAK and without serverMute, subscribing only without serverDeaf)",
    status: 200,
    response: MediaGrant,
    errors: NOT_CONNECTED,
  }),
  leaveVoice: defineRoute({
    method: 'POST',
    path: '/v1/voice/leave',
    service: g,
    summary: 'Disconnect from voice; an emptied temporary channel is deleted. No change when not connected',
    status: 204,
    response: null,
  }),
  updateVoiceState: defineRoute({
    method: 'PATCH',
    path: '/v1/voice/state',
    service: g,
    summary: "Set the caller's selfMute and selfDeaf",
    body: VoiceStateBody,
    status: 200,
    response: VoiceState,
    errors: { 400: 'Invalid input', ...NOT_CONNECTED },
  }),
  voiceHeartbeat: defineRoute({
    method: 'POST',
    path: '/v1/voice/heartbeat',
    service: g,
    summary:
      "Keep the caller's voice state alive; it ends when no heartbeat arrives before expiresAt. `speaking: true` counts as activity (the server's afkTimeoutSeconds runs from the last activity)",
    body: VoiceHeartbeatBody,
    status: 200,
    response: VoiceState,
    errors: NOT_CONNECTED,
  }),
  moveVoice: defineRoute({
    method: 'POST',
    path: '/v1/voice/move',
    service: g,
    summary: 'Move a connected member to another voice channel of the same server, such as the AFK channel (MOVE_MEMBERS)',
    body: VoiceMoveBody,
    status: 200,
    response: VoiceState,
    errors: {
      400: 'Invalid input, a text channel, or the member is not connected in that server (or in a channel hidden from the caller)',
      403: 'Missing MOVE_MEMBERS in the source or the target channel',
      404: 'Unknown channel, or not visible to the caller',
    },
  }),
  moderateVoiceState: defineRoute({
    method: 'PATCH',
    path: '/v1/servers/:serverId/voice-states/:userId',
    service: g,
    summary:
      "Server-mute (`mute`, MUTE_MEMBERS) or server-deafen (`deaf`, DEAFEN_MEMBERS) a connected member, as Discord's modify-member; the state's serverMute/serverDeaf, and the member's next media grant, follow; both stay on the member across leaving and rejoining voice until lifted",
    params: MemberParams,
    body: VoiceModerationBody,
    status: 200,
    response: VoiceState,
    errors: {
      400: 'Invalid input, or the member is not connected in this server (or in a channel hidden from the caller)',
      403: 'Missing MUTE_MEMBERS or DEAFEN_MEMBERS in the channel the member is in, or not a member of this public server',
      404: 'Unknown server, or not visible to the caller',
    },
  }),
  disconnectVoiceState: defineRoute({
    method: 'DELETE',
    path: '/v1/servers/:serverId/voice-states/:userId',
    service: g,
    summary:
      "Disconnect a member from voice (MOVE_MEMBERS in their channel; Discord's move to no channel): their state ends (guilds.voice.left, reason `disconnected`) and they get no grant until they join again",
    params: MemberParams,
    status: 204,
    response: null,
    errors: {
      400: 'The member is not connected in this server (or in a channel hidden from the caller)',
      403: 'Missing MOVE_MEMBERS in the channel the member is in, or not a member of this public server',
      404: 'Unknown server, or not visible to the caller',
    },
  }),
  listVoiceStates: defineRoute({
    method: 'GET',
    path: '/v1/servers/:serverId/voice-states',
    service: g,
    summary: "Who is connected where in the server's voice channels the caller can see",
    params: ServerParams,
    status: 200,
    response: z.array(VoiceState),
    errors: { 403: 'Not a member of this public server', 404: 'Unknown server, or not visible to the caller' },
  }),
};
