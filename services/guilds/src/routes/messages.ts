import { createHash } from 'node:crypto';
import { messagesRoutes as r } from '@chat/contracts';
import { contextOf, IDEMPOTENT, noContent, route } from '@chat/kit';
import type { FastifyInstance } from 'fastify';
import type { Domain } from '../domain/context.ts';
import { deleteMessage, editMessage, listMessages, sendMessage } from '../domain/messages.ts';
import { listPins, setPin } from '../domain/pins.ts';
import { addMyReaction, listReactionUsers, removeMyReaction } from '../domain/reactions.ts';
import { startTyping } from '../domain/typing.ts';
import { createWebhook, deleteWebhook, executeWebhook, listWebhooks } from '../domain/webhooks.ts';

/** Channel messages, pins and reactions. */
export function messageRoutes(app: FastifyInstance, d: Domain): void {
  route(app, r.sendMessage, async (req) => sendMessage(d, contextOf(req), req.params.channelId, req.body), IDEMPOTENT);
  route(app, r.listMessages, async (req) => listMessages(d, contextOf(req), req.params.channelId, req.query));
  route(app, r.editMessage, async (req) => editMessage(d, contextOf(req), req.params.channelId, req.params.messageId, req.body.content));
  route(app, r.deleteMessage, async (req) => noContent(deleteMessage(d, contextOf(req), req.params.channelId, req.params.messageId)));

  route(app, r.listPins, async (req) => listPins(d, contextOf(req), req.params.channelId));
  route(app, r.pinMessage, async (req) => noContent(setPin(d, contextOf(req), req.params.channelId, req.params.messageId, true)));
  route(app, r.unpinMessage, async (req) => noContent(setPin(d, contextOf(req), req.params.channelId, req.params.messageId, false)));

  route(app, r.addReaction, async (req) =>
    noContent(addMyReaction(d, contextOf(req), req.params.channelId, req.params.messageId, req.params.emoji)),
  );
  route(app, r.removeReaction, async (req) =>
    noContent(removeMyReaction(d, contextOf(req), req.params.channelId, req.params.messageId, req.params.emoji)),
  );
  route(app, r.listReactionUsers, async (req) =>
    listReactionUsers(d, contextOf(req), req.params.channelId, req.params.messageId, req.params.emoji, req.query),
  );
  route(app, r.typing, async (req) => noContent(startTyping(d, contextOf(req), req.params.channelId)));
}

/** Webhook management (members with MANAGE_WEBHOOKS) and execution (the token in the path). */
export function webhookRoutes(app: FastifyInstance, d: Domain): void {
  // Sealed: the answer carries the token, which is shown once and stored nowhere in clear.
  route(app, r.createWebhook, async (req) => createWebhook(d, contextOf(req), req.params.channelId, req.body), {
    ...IDEMPOTENT,
    sealed: true,
  });
  route(app, r.listWebhooks, async (req) => listWebhooks(d, contextOf(req), req.params.channelId));
  route(app, r.deleteWebhook, async (req) => noContent(deleteWebhook(d, contextOf(req), req.params.id)));
  route(
    app,
    r.executeWebhook,
    async (req, reply) => {
      const message = await executeWebhook(d, { requestId: req.id }, req.params.id, req.params.token, req.body);
      if (req.query.wait) return message;
      reply.code(204);
      return message;
    },
    // Keys belong to the webhook and its token (hashed: scopes are stored): its callers share no
    // user, and a wrong token must reach the handler's 401, not learn which keys were used.
    { idempotent: (req) => webhookIdempotencyScope(req.params as { id: string; token: string }) },
  );
}

function webhookIdempotencyScope({ id, token }: { id: string; token: string }): string {
  return `webhook:${id}:${createHash('sha256').update(token).digest('base64url')}`;
}
