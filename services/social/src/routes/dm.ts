import { socialRoutes as r, searchRoutes } from '@chat/contracts';
import { contextOf, IDEMPOTENT, noContent, route } from '@chat/kit';
import type { FastifyInstance } from 'fastify';
import type { SocialDeps } from '../deps.ts';
import { conversationOf, listConversations, openConversation } from '../domain/conversations.ts';
import { leaveConversation } from '../domain/groups.ts';
import { deleteMessage, editMessage, listMessages, react, searchDirectMessages, sendMessage } from '../domain/messages.ts';
import { startTyping } from '../domain/typing.ts';

/** Answers of 204 routes carry no body. */

export function dmRoutes(app: FastifyInstance, deps: SocialDeps): void {
  route(
    app,
    r.createConversation,
    async (req, reply) => {
      const { conversation, created } = await openConversation(deps, contextOf(req), req.body.userIds);
      if (created) reply.code(201);
      return conversation;
    },
    IDEMPOTENT,
  );
  route(app, r.listConversations, (req) => listConversations(deps, contextOf(req), req.query));
  route(app, r.getConversation, (req) => conversationOf(deps, contextOf(req), req.params.id));
  route(app, r.leaveConversation, (req) => noContent(leaveConversation(deps, contextOf(req), req.params.id)));
  route(app, r.listMessages, (req) => listMessages(deps, contextOf(req), req.params.id, req.query));
  route(app, r.sendMessage, (req) => sendMessage(deps, contextOf(req), req.body), IDEMPOTENT);
  route(app, r.editMessage, (req) => editMessage(deps, contextOf(req), req.params.id, req.body.content));
  route(app, r.deleteMessage, (req) => noContent(deleteMessage(deps, contextOf(req), req.params.id)));
  route(app, r.addReaction, (req) => noContent(react(deps, contextOf(req), req.params.id, req.params.emoji, true)));
  route(app, r.removeReaction, (req) => noContent(react(deps, contextOf(req), req.params.id, req.params.emoji, false)));
  route(app, searchRoutes.searchDirectMessages, (req) => searchDirectMessages(deps, contextOf(req), req.query));
  route(app, r.conversationTyping, (req) => noContent(startTyping(deps, contextOf(req), req.params.id)));
}
