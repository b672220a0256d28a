import { AUTH_RPC, REALTIME_RPC, UserGetRequest, type UserLookupReply, UserLookupRequest } from '@chat/contracts';
import { type Bus, type Logger, notFound, type Pool, serveRpc, withTx } from '@chat/kit';
import type { AuthConfig } from '../config.ts';
import { findUserForLookup, toSelfUser, toUserEvent } from '../db/users.ts';
import { badgePolicy } from '../domain/badges.ts';
import { getUser } from '../domain/profile.ts';

/**
 * The questions other services ask auth: the account of an identifying user (the gateway's READY
 * `user`, with the chosen status), and a user a read-model has not heard of yet.
 */
export function serveAuthRpc(bus: Bus, log: Logger, pool: Pool, config: AuthConfig): void {
  const policy = badgePolicy(config);
  serveRpc(bus, log, REALTIME_RPC.userGet, UserGetRequest, async ({ userId }) => toSelfUser(await getUser({ pool }, userId), policy));
  serveRpc(bus, log, AUTH_RPC.userLookup, UserLookupRequest, (ref) =>
    withTx(pool, async (tx): Promise<UserLookupReply> => {
      const row = await findUserForLookup(tx, ref);
      if (!row) throw notFound('User');
      return { user: toUserEvent(row, policy), version: new Date().toISOString() };
    }),
  );
}
