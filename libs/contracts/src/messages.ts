import { z } from 'zod';
import { Id, ImageUrl, PageQuery, shownName, Timestamp } from './common.ts';
import { Attachments, Embeds, MessageNonce, MessageType, Reactions } from './records.ts';

/**
 * Schemas of the messages area (channel messages, pins, reactions, webhooks; guilds service):
 * records the spec leaves open (shaped as Discord's), request bodies, queries and events.
 */

export const MAX_MESSAGE_LENGTH = 4000;
export const MAX_MESSAGE_ATTACHMENTS = 10;
export const MAX_PINS_PER_CHANNEL = 50;

// ---- Records ----

/** Who a message mentions. `everyone` is true only when @everyone/@here may notify (MENTION_EVERYONE). */
export const MessageMentions = z.object({ users: z.array(Id), roles: z.array(Id), everyone: z.boolean() }).meta({ id: 'MessageMentions' });
export type MessageMentions = z.infer<typeof MessageMentions>;

export const ChannelMessage = z
  .object({
    id: Id,
    channelId: Id,
    serverId: Id,
    /** The user who wrote it, or the webhook's id for a webhook message (Discord's convention). */
    authorId: Id,
    authorName: z.string(),
    authorAvatar: z.string().nullable(),
    content: z.string(),
    attachments: Attachments,
    replyToId: Id.nullable(),
    mentions: MessageMentions,
    pinned: z.boolean(),
    editedAt: Timestamp.nullable(),
    createdAt: Timestamp,
    /** `{emoji: {count, me}}`, `me` as the caller sees it. */
    reactions: Reactions,
    webhookId: Id.nullable(),
    /**
     * `member_join`: the author joined the server (posted in its entrance channel); `pinned`: the
     * author pinned `replyToId`. Absent in events of producers older than the field: `default`.
     */
    type: MessageType.default('default'),
    nonce: MessageNonce.optional(),
    embeds: Embeds,
  })
  .meta({ id: 'Message' });
export type ChannelMessage = z.infer<typeof ChannelMessage>;

export const Webhook = z
  .object({ id: Id, channelId: Id, serverId: Id, name: z.string(), avatarUrl: z.string().nullable(), createdBy: Id, createdAt: Timestamp })
  .meta({ id: 'Webhook' });
export type Webhook = z.infer<typeof Webhook>;

/** The answer to creating a webhook: the only time its token (and the url that holds it) is shown. */
export const CreatedWebhook = Webhook.extend({ token: z.string(), url: z.string() }).meta({ id: 'CreatedWebhook' });
export type CreatedWebhook = z.infer<typeof CreatedWebhook>;

// ---- Field rules ----

const Content = z.string().max(MAX_MESSAGE_LENGTH);
const MessageAttachments = Attachments.refine((a) => Object.keys(a).length <= MAX_MESSAGE_ATTACHMENTS, {
  error: `at most ${MAX_MESSAGE_ATTACHMENTS} attachments`,
});
const WebhookName = shownName(1, 80);

/**
 * One RGI emoji (sequences and modifiers included), as Unicode defines them. The `v` flag (Node 20
 * has it) is newer than the TypeScript target, so it is passed as a variable, not in a literal.
 */
const UNICODE_SETS: string = 'v';
const UNICODE_EMOJI = new RegExp('^\\p{RGI_Emoji}$', UNICODE_SETS);
/** A custom emoji as Discord writes it in a path: `name:id`. */
const CUSTOM_EMOJI = /^[A-Za-z0-9_]{2,32}:(?:[0-9]{1,20}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/i;

/**
 * A reaction's emoji, in the one spelling it is stored, counted and told under. A custom emoji
 * (`name:id`) is one emoji whatever the case of its name or id: the platform has no custom emoji
 * to look a name up in (no route creates one), so `PARTY:ID` and `party:id` are folded to lower
 * case rather than kept as two reactions. A unicode emoji is kept as it is (it has no case).
 */
export const Emoji = z
  .string()
  .max(64)
  .refine((e) => UNICODE_EMOJI.test(e) || CUSTOM_EMOJI.test(e), { error: 'must be a unicode emoji or a custom name:id' })
  .overwrite((e) => (CUSTOM_EMOJI.test(e) ? e.toLowerCase() : e));

// ---- Bodies, queries, params ----

/** `content` may be empty only when attachments are given (checked once the attachments are verified). */
export const SendMessageBody = z.object({
  content: Content.default(''),
  attachments: MessageAttachments.optional(),
  replyToId: Id.optional(),
  nonce: MessageNonce.optional(),
});
export type SendMessageBody = z.infer<typeof SendMessageBody>;

export const EditMessageBody = z.object({ content: Content });

/** Newest first; `before` pages back, `after` forward from a message seen, `around` centres on one. */
export const ChannelMessagesQuery = PageQuery.extend({ around: Id.optional() }).refine(
  (q) => [q.before, q.after, q.around].filter(Boolean).length <= 1,
  { error: 'give at most one of before, after and around' },
);
export type ChannelMessagesQuery = z.infer<typeof ChannelMessagesQuery>;

export const ReactionUsersQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(25),
  /** The last user id of the previous page (users are ordered by id). */
  after: Id.optional(),
});

export const MessageParams = z.object({ channelId: Id, messageId: Id });
export const MessageReactionParams = MessageParams.extend({ emoji: Emoji });

export const CreateWebhookBody = z.object({ name: WebhookName, avatarUrl: ImageUrl.nullish() });
export type CreateWebhookBody = z.infer<typeof CreateWebhookBody>;

export const WebhookParams = z.object({ id: Id });
/** The token is 43 base64url characters; anything else is simply a wrong token (401, not 400). */
export const ExecuteWebhookParams = z.object({ id: Id, token: z.string().min(1).max(256) });
export const ExecuteWebhookBody = z.object({
  content: Content.refine((c) => c.trim() !== '', { error: 'must not be empty' }),
  username: WebhookName.optional(),
  avatarUrl: ImageUrl.optional(),
});
export type ExecuteWebhookBody = z.infer<typeof ExecuteWebhookBody>;
export const ExecuteWebhookQuery = z.object({
  /** Discord's `?wait=true`: answer 200 with the message instead of 204. */
  wait: z
    .enum(['true', 'false'])
    .default('false')
    .transform((w) => w === 'true'),
});

// ---- Events (subject -> payload) ----

/** Reactions are per viewer (`me`), so message events leave them out; reaction events carry the change. */
export const MessageEventData = ChannelMessage.omit({ reactions: true });
export const MessageDeletedEventData = z.object({ id: Id, channelId: Id, serverId: Id });
export const ReactionEventData = z.object({ messageId: Id, channelId: Id, serverId: Id, userId: Id, emoji: z.string() });
export const PinEventData = z.object({ messageId: Id, channelId: Id, serverId: Id, by: Id });

export const MESSAGES_SUBJECTS = {
  messageCreated: 'guilds.message.created',
  messageUpdated: 'guilds.message.updated',
  messageDeleted: 'guilds.message.deleted',
  reactionAdded: 'guilds.reaction.added',
  reactionRemoved: 'guilds.reaction.removed',
  pinAdded: 'guilds.pin.added',
  pinRemoved: 'guilds.pin.removed',
} as const;

export const MESSAGES_EVENTS = {
  [MESSAGES_SUBJECTS.messageCreated]: MessageEventData,
  [MESSAGES_SUBJECTS.messageUpdated]: MessageEventData,
  [MESSAGES_SUBJECTS.messageDeleted]: MessageDeletedEventData,
  [MESSAGES_SUBJECTS.reactionAdded]: ReactionEventData,
  [MESSAGES_SUBJECTS.reactionRemoved]: ReactionEventData,
  [MESSAGES_SUBJECTS.pinAdded]: PinEventData,
  [MESSAGES_SUBJECTS.pinRemoved]: PinEventData,
} as const;
