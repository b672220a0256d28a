import { readStatesRoutes as r } from '@chat/contracts';
import { contextOf, route } from '@chat/kit';
import type { FastifyInstance } from 'fastify';
import type { SocialDeps } from '../deps.ts';
import { ackFeed, getFeed, getSettings, putSettings } from '../domain/notifications.ts';
import { ackChannel, ackConversation, listReadStates } from '../domain/read-states.ts';

export function readStatesRoutes(app: FastifyInstance, deps: SocialDeps): void {
  route(app, r.ackChannel, (req) => ackChannel(deps, contextOf(req), req.params.channelId, req.body.messageId));
  route(app, r.ackConversation, (req) => ackConversation(deps, contextOf(req), req.params.id, req.body.messageId));
  route(app, r.listReadStates, (req) => listReadStates(deps, contextOf(req)));
  route(app, r.listNotifications, (req) => getFeed(deps, contextOf(req), req.query));
  route(app, r.ackNotifications, (req) => ackFeed(deps, contextOf(req), req.body.until));
  route(app, r.getNotificationSettings, (req) => getSettings(deps, contextOf(req), req.params.serverId));
  route(app, r.putNotificationSettings, (req) => putSettings(deps, contextOf(req), req.params.serverId, req.body));
}
