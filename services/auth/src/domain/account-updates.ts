import { type AccountUpdatedData, AUTH_SUBJECTS } from '@chat/contracts';
import { enqueueEvent, type Queryable } from '@chat/kit';

/**
 * Tells the owner's sessions that their account changed, in the transaction of the change: the
 * gateway sends them the account as GET /v1/users/@me shows it (USER_UPDATE), asked of auth, so
 * the email never travels on the bus.
 */
export async function announceAccountUpdate(tx: Queryable, userId: string, requestId?: string): Promise<void> {
  const data: AccountUpdatedData = { userId };
  await enqueueEvent(tx, AUTH_SUBJECTS.accountUpdated, data, requestId);
}
