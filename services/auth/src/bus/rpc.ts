import { UserGetRpc, UserLookupRpc, UsersPageRpc } from '@chat/contracts';
import { type Bus, type Logger, type Pool, serveRpc } from '@chat/kit';
import type { AuthConfig } from '../config.ts';
import { lookupUser, usersPage } from '../domain/lookup.ts';
import { getMe } from '../domain/profile.ts';

/**
 * The questions other services ask auth: the account of an identifying user (the gateway's READY
 * `user`, with the chosen status), a user a read-model has not heard of yet, and every user for a
 * read-model that starts after the AUTH stream dropped its oldest events.
 */
export function serveAuthRpc(bus: Bus, log: Logger, pool: Pool, config: AuthConfig): void {
  serveRpc(bus, log, UserGetRpc, ({ userId }) => getMe({ pool, config }, userId));
  serveRpc(bus, log, UserLookupRpc, (ref) => lookupUser({ pool, config }, ref));
  serveRpc(bus, log, UsersPageRpc, (page) => usersPage({ pool, config }, page));
}
