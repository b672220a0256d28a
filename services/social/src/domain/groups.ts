import { SOCIAL_SUBJECTS } from '@chat/contracts';
import { badRequest, enqueueEvent, type Pool, type RequestContext, withTx } from '@chat/kit';
import { deleteConversation, deleteParticipant, lockGroupParticipants, setOwner } from '../db/conversations.ts';
import { leaveLiveCall } from './calls.ts';
import { participantAccess } from './conversations.ts';
import { conversationLeft } from './notifications.ts';

/** Leaving a group: the one change of a group's people once it is made (it cannot grow). */

type Deps = { pool: Pool; clock?: () => Date };

/**
 * The caller leaves a group, and its live call with it. The owner's leaving hands the group to the
 * participant who joined first (ties by user id); the last one out removes the group and its messages.
 * The leaver's notification entries of the group go with them.
 */
export async function leaveConversation(deps: Deps, ctx: RequestContext, id: string): Promise<void> {
  await withTx(deps.pool, async (tx) => {
    const access = await participantAccess(tx, ctx, id, { lock: true });
    if (!access.isGroup) throw badRequest('A direct conversation cannot be left');
    const remaining = (await lockGroupParticipants(tx, id)).filter((userId) => userId !== ctx.userId);
    await leaveLiveCall(tx, ctx, access, deps.clock?.() ?? new Date());
    await deleteParticipant(tx, id, ctx.userId);
    await conversationLeft(tx, ctx.userId, id, ctx.requestId);
    let ownerId = access.ownerId;
    if (remaining.length === 0) {
      await deleteConversation(tx, id);
      ownerId = null;
    } else if (ownerId === ctx.userId) {
      ownerId = remaining[0]!;
      await setOwner(tx, id, ownerId);
    }
    const data = { conversationId: id, userId: ctx.userId, ownerId, participantIds: remaining };
    await enqueueEvent(tx, SOCIAL_SUBJECTS.conversationLeft, data, ctx.requestId);
  });
}
