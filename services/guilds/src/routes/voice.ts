import { voiceRoutes as r } from '@chat/contracts';
import { contextOf, noContent, route } from '@chat/kit';
import type { FastifyInstance } from 'fastify';
import type { Domain } from '../domain/context.ts';
import {
  disconnectMember,
  heartbeat,
  joinVoice,
  leaveVoice,
  listVoiceStates,
  moderateVoiceState,
  moveMember,
  updateVoiceState,
  voiceGrant,
} from '../domain/voice.ts';

export function voiceRoutes(app: FastifyInstance, d: Domain): void {
  route(app, r.joinVoice, async (req) => joinVoice(d, contextOf(req), req.body.channelId));
  route(app, r.voiceGrant, async (req) => voiceGrant(d, contextOf(req)));
  route(app, r.leaveVoice, async (req) => noContent(leaveVoice(d, contextOf(req))));
  route(app, r.updateVoiceState, async (req) => updateVoiceState(d, contextOf(req), req.body));
  route(app, r.voiceHeartbeat, async (req) => heartbeat(d, contextOf(req), req.body?.speaking === true));
  route(app, r.moveVoice, async (req) => moveMember(d, contextOf(req), req.body));
  route(app, r.moderateVoiceState, async (req) => moderateVoiceState(d, contextOf(req), req.params.serverId, req.params.userId, req.body));
  route(app, r.disconnectVoiceState, async (req) => noContent(disconnectMember(d, contextOf(req), req.params.serverId, req.params.userId)));
  route(app, r.listVoiceStates, async (req) => listVoiceStates(d, contextOf(req), req.params.serverId));
}
