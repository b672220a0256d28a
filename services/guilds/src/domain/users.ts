import type { Queryable } from '@chat/kit';
import { AppError, lookupUserFromAuth } from '@chat/kit';
import { upsertUser, userExists } from '../db/users.ts';
import type { Ctx, Domain } from './context.ts';

/** The read-model does not know the user (yet): auth will be asked. A 404 if it never is. */
export class UserNotInReadModel extends AppError {
  constructor(readonly userId: string) {
    super(404, 'User not found');
  }
}

/** Inside a transaction: the user must be known to the read-model, else UserNotInReadModel. */
export async function requireKnownUser(tx: Queryable, userId: string): Promise<void> {
  if (!(await userExists(tx, userId))) throw new UserNotInReadModel(userId);
}

/**
 * Runs `fn`; if it stops at a user the read-model has not heard of (their event still in flight,
 * or the consumer behind), asks auth once over `rpc.auth.user.lookup`, stores the answer and runs
 * `fn` again. The question is asked only after `fn`'s own permission checks passed, and never
 * while its transaction holds locks. Only a user that auth does not know stays a 404.
 */
export async function withUserLookup<T>(d: Domain, ctx: Ctx, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (!(err instanceof UserNotInReadModel)) throw err;
    const found = await lookupUserFromAuth(d.bus, { id: err.userId }, ctx.requestId);
    if (!found) throw err;
    await upsertUser(d.pool, found.user, found.version);
    return fn();
  }
}
