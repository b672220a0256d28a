import { z } from 'zod';
import { ChannelParams, MemberUser } from '../guilds.ts';
import {
  ChannelMessage,
  ChannelMessagesQuery,
  CreatedWebhook,
  CreateWebhookBody,
  EditMessageBody,
  ExecuteWebhookBody,
  ExecuteWebhookParams,
  ExecuteWebhookQuery,
  MessageParams,
  MessageReactionParams,
  ReactionUsersQuery,
  SendMessageBody,
  Webhook,
  WebhookParams,
} from '../messages.ts';
import { defineRoute } from '../route.ts';

/** Channel messages, pins, reactions and webhooks (guilds service). Paths follow DESIGN.md's route map. */

const g = 'guilds' as const;
const VISIBILITY = { 404: 'Unknown, or not visible to the caller' };
const MANAGE = { 403: 'Missing permission', ...VISIBILITY };

const messages = {
  sendMessage: defineRoute({
    method: 'POST',
    path: '/v1/channels/:channelId/messages',
    service: g,
    summary:
      'Post a message (VIEW_CHANNEL, SEND_MESSAGES; ATTACH_FILES for attachments; READ_MESSAGE_HISTORY for a reply; slowmode per member)',
    params: ChannelParams,
    body: SendMessageBody,
    status: 201,
    response: ChannelMessage,
    errors: { ...MANAGE, 429: 'Slowmode: wait Retry-After seconds', 503: 'The media service cannot verify the attachments' },
  }),
  listMessages: defineRoute({
    method: 'GET',
    path: '/v1/channels/:channelId/messages',
    service: g,
    summary: 'A page of messages, newest first (READ_MESSAGE_HISTORY)',
    params: ChannelParams,
    query: ChannelMessagesQuery,
    status: 200,
    response: z.array(ChannelMessage),
    errors: MANAGE,
  }),
  editMessage: defineRoute({
    method: 'PATCH',
    path: '/v1/channels/:channelId/messages/:messageId',
    service: g,
    summary: "Edit the content of one's own message (sets editedAt)",
    params: MessageParams,
    body: EditMessageBody,
    status: 200,
    response: ChannelMessage,
    errors: { 403: 'Not your message', ...VISIBILITY },
  }),
  deleteMessage: defineRoute({
    method: 'DELETE',
    path: '/v1/channels/:channelId/messages/:messageId',
    service: g,
    summary: "Delete one's own message, or anyone's with MANAGE_MESSAGES",
    params: MessageParams,
    status: 204,
    response: null,
    errors: MANAGE,
  }),
};

const pins = {
  listPins: defineRoute({
    method: 'GET',
    path: '/v1/channels/:channelId/pins',
    service: g,
    summary: 'Pinned messages, newest pin first (READ_MESSAGE_HISTORY)',
    params: ChannelParams,
    status: 200,
    response: z.array(ChannelMessage),
    errors: MANAGE,
  }),
  pinMessage: defineRoute({
    method: 'PUT',
    path: '/v1/channels/:channelId/pins/:messageId',
    service: g,
    summary: 'Pin a message (MANAGE_MESSAGES; at most 50 per channel); pinning it again changes nothing',
    params: MessageParams,
    status: 204,
    response: null,
    errors: { 400: 'The channel already has 50 pins', ...MANAGE },
  }),
  unpinMessage: defineRoute({
    method: 'DELETE',
    path: '/v1/channels/:channelId/pins/:messageId',
    service: g,
    summary: 'Unpin a message (MANAGE_MESSAGES)',
    params: MessageParams,
    status: 204,
    response: null,
    errors: MANAGE,
  }),
};

const reactions = {
  addReaction: defineRoute({
    method: 'PUT',
    path: '/v1/channels/:channelId/messages/:messageId/reactions/:emoji/@me',
    service: g,
    summary: 'React (READ_MESSAGE_HISTORY; ADD_REACTIONS for an emoji not yet on the message); twice is a no-op',
    params: MessageReactionParams,
    status: 204,
    response: null,
    errors: MANAGE,
  }),
  removeReaction: defineRoute({
    method: 'DELETE',
    path: '/v1/channels/:channelId/messages/:messageId/reactions/:emoji/@me',
    service: g,
    summary: "Take back one's reaction",
    params: MessageReactionParams,
    status: 204,
    response: null,
    errors: VISIBILITY,
  }),
  listReactionUsers: defineRoute({
    method: 'GET',
    path: '/v1/channels/:channelId/messages/:messageId/reactions/:emoji',
    service: g,
    summary: 'Who reacted with this emoji (READ_MESSAGE_HISTORY), by user id',
    params: MessageReactionParams,
    query: ReactionUsersQuery,
    status: 200,
    response: z.array(MemberUser),
    errors: MANAGE,
  }),
};

const webhooks = {
  createWebhook: defineRoute({
    method: 'POST',
    path: '/v1/channels/:channelId/webhooks',
    service: g,
    summary: 'Create a webhook (MANAGE_WEBHOOKS); the only answer that shows its token',
    params: ChannelParams,
    body: CreateWebhookBody,
    status: 201,
    response: CreatedWebhook,
    errors: MANAGE,
  }),
  listWebhooks: defineRoute({
    method: 'GET',
    path: '/v1/channels/:channelId/webhooks',
    service: g,
    summary: "The channel's webhooks, without tokens (MANAGE_WEBHOOKS)",
    params: ChannelParams,
    status: 200,
    response: z.array(Webhook),
    errors: MANAGE,
  }),
  deleteWebhook: defineRoute({
    method: 'DELETE',
    path: '/v1/webhooks/:id',
    service: g,
    summary: 'Delete a webhook (MANAGE_WEBHOOKS in its channel)',
    params: WebhookParams,
    status: 204,
    response: null,
    errors: MANAGE,
  }),
  /**
   * The gateway counts this route per webhook id (`:id`) in the Webhook tier. Discord's answers:
   * 204 with no body, or 200 with the message when `?wait=true` (200 is the contract's status so the
   * message is validated; the handler answers 204 otherwise).
   */
  executeWebhook: defineRoute({
    method: 'POST',
    path: '/v1/webhooks/:id/:token',
    service: g,
    summary: 'Post a message as the webhook (token in the path; no bearer token): 204, or 200 with the message when ?wait=true',
    auth: false,
    tier: 'webhook',
    params: ExecuteWebhookParams,
    query: ExecuteWebhookQuery,
    body: ExecuteWebhookBody,
    status: 200,
    response: ChannelMessage,
    errors: { 401: 'Unknown webhook or wrong token' },
  }),
};

/** Typing indicators (DESIGN.md presence and typing). */
const typing = {
  typing: defineRoute({
    method: 'POST',
    path: '/v1/channels/:channelId/typing',
    service: 'guilds',
    summary: 'Show the others in the channel that the caller is typing (TYPING_START, 10 s, not stored)',
    params: ChannelParams,
    status: 204,
    response: null,
    errors: { 403: 'Missing permission SEND_MESSAGES', 404: 'Unknown channel or not visible' },
  }),
};

/** Routes of the messages area. */
export const messagesRoutes = { ...messages, ...pins, ...reactions, ...webhooks, ...typing };
