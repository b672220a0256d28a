import type { Queryable } from '@chat/kit';
import { blockedWithIds, contactIdsOf, conversationIdsOf, friendIdsOf } from '../db/audience.ts';

/** What the gateway's socket asks social: READY's conversations, and who sees a user's presence. */

export async function conversationsOfUser(db: Queryable, userId: string): Promise<{ conversationIds: string[] }> {
  return { conversationIds: await conversationIdsOf(db, userId) };
}

export async function friendsOfUser(db: Queryable, userId: string): Promise<{ userIds: string[] }> {
  return { userIds: await friendIdsOf(db, userId) };
}

/** Who may fetch the user's key bundles as far as social knows, and who is in a block with them (KEYS_UPDATE). */
export async function contactsOfUser(db: Queryable, userId: string): Promise<{ userIds: string[]; blockedIds: string[] }> {
  const [userIds, blockedIds] = await Promise.all([contactIdsOf(db, userId), blockedWithIds(db, userId)]);
  return { userIds, blockedIds };
}
