import { z } from 'zod';
import { Id } from '../common.ts';
import { defineRoute } from '../route.ts';

/** Routes of the messages area; the rest is filled in by the issue that builds it. */
export const messagesRoutes = {
  executeWebhook: defineRoute({
    method: 'POST',
    path: '/v1/webhooks/:id/:token',
    service: 'guilds',
    summary: 'Post a message as the webhook (its token in the path; no bearer token)',
    auth: false,
    tier: 'webhook',
    params: z.object({ id: Id, token: z.string().min(1).max(256) }),
    body: z.object({
      content: z.string().min(1).max(2000).optional(),
      username: z.string().min(1).max(80).optional(),
      avatarUrl: z.url().max(2048).optional(),
    }),
    status: 204,
    response: null,
  }),
};
