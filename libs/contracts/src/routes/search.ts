import { IdParams } from '../common.ts';
import { defineRoute } from '../route.ts';
import { DirectMessageSearchResult, MessageSearchQuery, MessageSearchResult, ServerMessageSearchQuery } from '../search.ts';

/** Message search (DESIGN.md route map: search): each in the service that holds the messages. */
export const searchRoutes = {
  searchServerMessages: defineRoute({
    method: 'GET',
    path: '/v1/servers/:id/messages/search',
    service: 'guilds',
    summary:
      'Search the messages of the channels where the caller has VIEW_CHANNEL and READ_MESSAGE_HISTORY, newest first ' +
      '(q in web search syntax: "a phrase", -excluded, or; accents and case ignored)',
    params: IdParams,
    query: ServerMessageSearchQuery,
    status: 200,
    response: MessageSearchResult,
    errors: {
      400: 'q empty, too long or without a word to find; a bad id or has',
      403: 'Not a member of this public server',
      404: 'Unknown server, or not visible to the caller',
    },
  }),
  searchDirectMessages: defineRoute({
    method: 'GET',
    path: '/v1/dm/search',
    service: 'social',
    summary: "Search the caller's own conversations, newest first (q as in server search; messages of blocked users left out)",
    query: MessageSearchQuery,
    status: 200,
    response: DirectMessageSearchResult,
    errors: { 400: 'q empty, too long or without a word to find; a bad id' },
  }),
};
