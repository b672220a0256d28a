import { AUTH_RPC, type UserLookupReply, UserLookupReply as UserLookupReplySchema, type UserLookupRequest } from '@chat/contracts';
import { type Bus, requestRpc } from './bus.ts';
import { AppError } from './errors.ts';

/**
 * Asks auth about a user that a read-model does not know yet (DESIGN.md: on a miss, ask the owner
 * once with a typed RPC and store the answer). Undefined when auth does not know the user either;
 * a bus that is down or slow surfaces as its 503/504.
 */
export async function lookupUserFromAuth(bus: Bus, ref: UserLookupRequest, requestId?: string): Promise<UserLookupReply | undefined> {
  try {
    const reply = await requestRpc<unknown>(bus, AUTH_RPC.userLookup, ref, requestId ? { requestId } : {});
    return UserLookupReplySchema.parse(reply);
  } catch (err) {
    if (err instanceof AppError && err.status === 404) return undefined;
    throw err;
  }
}
