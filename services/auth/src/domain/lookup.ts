import type { UserLookupReply, UserLookupRequest, UsersPageReply, UsersPageRequest } from '@chat/contracts';
import { notFound, type Pool, withTx } from '@chat/kit';
import type { AuthConfig } from '../config.ts';
import { findUserForLookup, findUsersPage, toUserEvent } from '../db/users.ts';
import { badgePolicy } from './badges.ts';

/**
 * A user another service's read-model has not heard of yet (rpc.auth.user.lookup). The row is
 * read FOR SHARE, so an update in flight commits first; `version` is when it was read, so an older
 * event arriving later changes nothing in the read-model. 404: auth does not know the user.
 */
export function lookupUser(deps: { pool: Pool; config: AuthConfig }, ref: UserLookupRequest): Promise<UserLookupReply> {
  return withTx(deps.pool, async (tx) => {
    const row = await findUserForLookup(tx, ref);
    if (!row) throw notFound('User');
    return { user: toUserEvent(row, badgePolicy(deps.config)), version: new Date().toISOString() };
  });
}

/**
 * A page of every user, for a read-model that starts after the AUTH stream dropped its oldest
 * events (rpc.auth.users.page): read and versioned as one lookup each.
 */
export function usersPage(deps: { pool: Pool; config: AuthConfig }, page: UsersPageRequest): Promise<UsersPageReply> {
  return withTx(deps.pool, async (tx) => {
    const rows = await findUsersPage(tx, page.after, page.limit);
    const policy = badgePolicy(deps.config);
    return { users: rows.map((row) => toUserEvent(row, policy)), version: new Date().toISOString() };
  });
}
