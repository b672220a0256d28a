import { AUTH_RPC, type UserLookupReply, UserLookupRequest } from '@chat/contracts';
import { type Bus, type Logger, notFound, type Pool, serveRpc, withTx } from '@chat/kit';
import { type BadgePolicy, findUserForLookup, toUserEvent } from '../db/users.ts';

/** The questions other services ask auth: a user their read-model has not heard of yet. */
export function serveAuthRpc(bus: Bus, log: Logger, pool: Pool, policy: BadgePolicy): void {
  serveRpc(bus, log, AUTH_RPC.userLookup, UserLookupRequest, (ref) =>
    withTx(pool, async (tx): Promise<UserLookupReply> => {
      const row = await findUserForLookup(tx, ref);
      if (!row) throw notFound('User');
      return { user: toUserEvent(row, policy), version: new Date().toISOString() };
    }),
  );
}
