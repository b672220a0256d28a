import type { Queryable } from '@chat/kit';
import { conversationIdsOf, friendIdsOf } from '../db/audience.ts';

/** What the gateway's socket asks social: READY's conversations, and who sees a user's presence. */

export async function conversationsOfUser(db: Queryable, userId: string): Promise<{ conversationIds: string[] }> {
  return { conversationIds: await conversationIdsOf(db, userId) };
}

export async function friendsOfUser(db: Queryable, userId: string): Promise<{ userIds: string[] }> {
  return { userIds: await friendIdsOf(db, userId) };
}
