import { type MessageSearchResult, Permission, type ServerMessageSearchQuery } from '@chat/contracts';
import { searchMessages } from '../db/messages.ts';
import { memberAccess, visibleChannels } from './access.ts';
import type { Ctx, Domain } from './context.ts';
import { withReactions } from './messages.ts';
import { has } from './permissions.ts';

/**
 * Search of a server's messages. What the caller may read is decided first, by the same
 * permission function as every route (overrides and hidden channels included), and the search
 * statement reads only those channels: a hit elsewhere is never counted nor answered. The channels
 * and overrides come from the kept channel list at the version read with the membership, so a
 * search of a server with a thousand channels reads none of their rows.
 */
export async function searchServerMessages(
  d: Domain,
  ctx: Ctx,
  serverId: string,
  query: ServerMessageSearchQuery,
): Promise<MessageSearchResult> {
  const access = await memberAccess(d.pool, serverId, ctx.userId);
  const readable = (await visibleChannels(d.pool, access, d.channelLists))
    .filter(({ channel, permissions }) => has(permissions, Permission.READ_MESSAGE_HISTORY) && channel.channelType === 'text')
    .map(({ channel }) => channel.id)
    // A channel named that the caller cannot read simply has no hits for them.
    .filter((id) => query.channelId === undefined || id === query.channelId);
  const found = await searchMessages(d.pool, readable, { text: query.q, page: query, authorId: query.authorId, has: query.has });
  return { total: found.total, messages: await withReactions(d.pool, found.messages, ctx.userId) };
}
