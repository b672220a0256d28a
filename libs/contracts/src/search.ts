import { z } from 'zod';
import { Id } from './common.ts';
import { ChannelMessage } from './messages.ts';
import { DirectMessage } from './records.ts';

/**
 * Message search (issue 19): channel messages of one server (guilds) and the caller's direct
 * messages (social). Both take the same text in web search syntax and the same cursor.
 */

export const MAX_SEARCH_TEXT_LENGTH = 200;

/**
 * `"a phrase"`, `-excluded`, `this or that`, anything else is words that must all occur (accents
 * and case ignored). The length counts as sent; the service also refuses a text with no word to
 * find (only punctuation, or only excluded words).
 */
const SearchText = z
  .string({ error: (issue) => (issue.input === undefined ? 'required: the text to search for' : 'must be one text') })
  .max(MAX_SEARCH_TEXT_LENGTH, { error: `at most ${MAX_SEARCH_TEXT_LENGTH} characters` })
  // PostgreSQL text cannot hold NUL: refused here, or the database would answer an error.
  .refine((text) => !text.includes('\u0000'), { error: 'must not contain NUL characters' })
  .trim()
  .min(1, { error: 'must not be empty' });

/**
 * Newest first, 25 by default (at most 100). `before` pages back from the last message seen,
 * `after` forward from the first; both together give the messages between them.
 */
export const MessageSearchQuery = z.object({
  q: SearchText,
  limit: z.coerce.number().int().min(1).max(100).default(25),
  before: Id.optional(),
  after: Id.optional(),
});
export type MessageSearchQuery = z.infer<typeof MessageSearchQuery>;

/** What a channel message can carry besides text (Discord's `has:`). */
export const MessageHas = z.enum(['attachment', 'link']);
export type MessageHas = z.infer<typeof MessageHas>;

/** A server's search also narrows by author, channel, and what the message has. */
export const ServerMessageSearchQuery = MessageSearchQuery.extend({
  authorId: Id.optional(),
  channelId: Id.optional(),
  has: MessageHas.optional(),
});
export type ServerMessageSearchQuery = z.infer<typeof ServerMessageSearchQuery>;

/** `total` counts every hit of the query the caller may read, whatever page this is. */
export const MessageSearchResult = z
  .object({ total: z.number().int().min(0), messages: z.array(ChannelMessage) })
  .meta({ id: 'MessageSearchResult' });
export type MessageSearchResult = z.infer<typeof MessageSearchResult>;

export const DirectMessageSearchResult = z
  .object({ total: z.number().int().min(0), messages: z.array(DirectMessage) })
  .meta({ id: 'DirectMessageSearchResult' });
export type DirectMessageSearchResult = z.infer<typeof DirectMessageSearchResult>;
