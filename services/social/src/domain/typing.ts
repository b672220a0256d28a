import { REALTIME_SUBJECTS } from '@chat/contracts';
import { type Bus, publishEphemeralEvent, type Queryable, type RequestContext } from '@chat/kit';
import { assertMayWrite, participantAccess } from './conversations.ts';

/**
 * TYPING_START for the other participants (not those who blocked the typist: they never see their
 * messages either); only someone who may write there; nothing is stored.
 */
export async function startTyping(deps: { pool: Queryable; bus: Bus }, ctx: RequestContext, conversationId: string): Promise<void> {
  const access = await participantAccess(deps.pool, ctx, conversationId);
  assertMayWrite(access);
  const data = { conversationId, userId: ctx.userId, participantIds: access.audienceIds, timestamp: new Date().toISOString() };
  await publishEphemeralEvent(deps.bus, REALTIME_SUBJECTS.conversationTyping, data, ctx.requestId);
}
