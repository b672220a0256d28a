import { type Channel, type MessageSearchResult, Permission, type ServerMessageSearchQuery } from '@chat/contracts';
import { type ChannelScope, searchMessages } from '../db/messages.ts';
import { keptChannels, memberAccess, type ServerAccess, visibleChannels } from './access.ts';
import type { Ctx, Domain } from './context.ts';
import { withReactions } from './messages.ts';
import { has } from './permissions.ts';

/** Searches whose `except` scope went stale (a channel changed meanwhile) before one names its channels outright. */
const STALE_ATTEMPTS = 2;

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
  const search = { text: query.q, page: query, authorId: query.authorId, has: query.has };
  for (let attempt = 1; ; attempt++) {
    const access = await memberAccess(d.pool, serverId, ctx.userId);
    const found = await searchMessages(d.pool, await readableScope(d, access, query.channelId, attempt <= STALE_ATTEMPTS), search);
    if (found !== 'stale') return { total: found.total, messages: await withReactions(d.pool, found.messages, ctx.userId) };
  }
}

/**
 * The text channels the member may read history of, as the shorter list: the ones they may read,
 * or (`mayExclude`, with a kept list) the server's other channels, guarded by the list's version.
 * A channel named that the caller cannot read simply has no hits for them.
 */
async function readableScope(d: Domain, access: ServerAccess, channelId: string | undefined, mayExclude: boolean): Promise<ChannelScope> {
  const readable = (channels: readonly { channel: Channel; permissions: bigint }[]) =>
    channels
      .filter(({ channel, permissions }) => has(permissions, Permission.READ_MESSAGE_HISTORY) && channel.channelType === 'text')
      .map(({ channel }) => channel.id)
      .filter((id) => channelId === undefined || id === channelId);
  if (!d.channelLists || !mayExclude || channelId !== undefined)
    return { only: readable(await visibleChannels(d.pool, access, d.channelLists)) };
  const { list, visible } = await keptChannels(d.pool, access, d.channelLists);
  const only = readable(visible);
  const readableIds = new Set(only);
  const except = list.channels.map((c) => c.id).filter((id) => !readableIds.has(id));
  return except.length < only.length ? { except, serverId: access.server.id, listVersion: access.channelListVersion } : { only };
}
