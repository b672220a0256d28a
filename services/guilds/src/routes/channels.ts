import { serversRoutes as r } from '@chat/contracts';
import { contextOf, IDEMPOTENT, noContent, route } from '@chat/kit';
import type { FastifyInstance } from 'fastify';
import { memberChannelPermissions, myChannelPermissions } from '../domain/channel-permissions.ts';
import { createChannel, deleteChannel, getChannel, listVisibleChannels, reorderChannels, updateChannel } from '../domain/channels.ts';
import type { Domain } from '../domain/context.ts';
import { deleteOverride, listOverrides, putOverride } from '../domain/overrides.ts';

export function channelRoutes(app: FastifyInstance, d: Domain): void {
  route(app, r.createChannel, async (req) => createChannel(d, contextOf(req), req.params.serverId, req.body), IDEMPOTENT);
  route(app, r.listChannels, async (req) => listVisibleChannels(d, contextOf(req), req.params.serverId));
  route(app, r.reorderChannels, async (req) => reorderChannels(d, contextOf(req), req.params.serverId, req.body));
  route(app, r.getChannel, async (req) => getChannel(d, contextOf(req), req.params.channelId));
  route(app, r.updateChannel, async (req) => updateChannel(d, contextOf(req), req.params.channelId, req.body));
  route(app, r.deleteChannel, async (req) => noContent(deleteChannel(d, contextOf(req), req.params.channelId)));
  route(app, r.myChannelPermissions, async (req) =>
    myChannelPermissions(d, contextOf(req), req.params.channelId, req.query.explain === 'true'),
  );
  route(app, r.memberChannelPermissions, async (req) =>
    memberChannelPermissions(d, contextOf(req), req.params.channelId, req.params.userId, req.query.explain === 'true'),
  );
  route(app, r.listOverrides, async (req) => listOverrides(d, contextOf(req), req.params.channelId));
  route(app, r.putOverride, async (req) => putOverride(d, contextOf(req), req.params.channelId, req.body));
  route(app, r.deleteOverride, async (req) => noContent(deleteOverride(d, contextOf(req), req.params.channelId, req.params.overrideId)));
}
