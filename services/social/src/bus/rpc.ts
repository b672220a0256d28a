import { UserContactsRpc, UserConversationsRpc, UserFriendsRpc } from '@chat/contracts';
import { type Bus, type Logger, type Pool, serveRpc } from '@chat/kit';
import { contactsOfUser, conversationsOfUser, friendsOfUser } from '../domain/audience.ts';

/** What the gateway's socket asks social: READY's conversations, who sees a user's presence and key changes. */
export function serveSocialRpc(bus: Bus, log: Logger, pool: Pool): void {
  serveRpc(bus, log, UserConversationsRpc, ({ userId }) => conversationsOfUser(pool, userId));
  serveRpc(bus, log, UserFriendsRpc, ({ userId }) => friendsOfUser(pool, userId));
  serveRpc(bus, log, UserContactsRpc, ({ userId }) => contactsOfUser(pool, userId));
}
