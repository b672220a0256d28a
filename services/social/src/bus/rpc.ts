import { REALTIME_RPC, UserConversationsRequest, UserFriendsRequest } from '@chat/contracts';
import { type Bus, type Logger, type Pool, serveRpc } from '@chat/kit';
import { conversationIdsOf, friendIdsOf } from '../db/audience.ts';

/** What the gateway's socket asks social: READY's conversations, and who sees a user's presence. */
export function serveSocialRpc(bus: Bus, log: Logger, pool: Pool): void {
  serveRpc(bus, log, REALTIME_RPC.userConversations, UserConversationsRequest, async ({ userId }) => ({
    conversationIds: await conversationIdsOf(pool, userId),
  }));
  serveRpc(bus, log, REALTIME_RPC.userFriends, UserFriendsRequest, async ({ userId }) => ({ userIds: await friendIdsOf(pool, userId) }));
}
