import { AUTH_SUBJECTS, type ChosenStatus, REALTIME_SUBJECTS, type UpdateProfileBody } from '@chat/contracts';
import { enqueueEvent, notFound, type RequestContext, withTx } from '@chat/kit';
import * as users from '../db/users.ts';
import type { AuthDomainDeps } from '../deps.ts';
import { badgePolicy } from './badges.ts';

export async function getUser(deps: Pick<AuthDomainDeps, 'pool'>, id: string): Promise<users.UserRow> {
  const row = await users.findUserById(deps.pool, id);
  if (!row) throw notFound('User');
  return row;
}

/** Changes the caller's profile; a change that other services show (name, avatar) is announced. */
export async function updateMe(
  deps: Pick<AuthDomainDeps, 'pool' | 'config'>,
  ctx: RequestContext,
  patch: UpdateProfileBody,
): Promise<users.UserRow> {
  return withTx(deps.pool, async (tx) => {
    const before = await users.lockUser(tx, ctx.userId);
    const after = await users.updateProfile(tx, ctx.userId, patch);
    if (before.display_name !== after.display_name || before.avatar_url !== after.avatar_url) {
      await enqueueEvent(tx, AUTH_SUBJECTS.userUpdated, users.toUserEvent(after, badgePolicy(deps.config)), ctx.requestId);
    }
    // The gateway shows the chosen status to friends and co-members while the user is connected.
    if (before.status !== after.status || before.custom_status !== after.custom_status) {
      const presence = { userId: after.id, status: chosenStatus(after.status), customStatus: after.custom_status };
      await enqueueEvent(tx, REALTIME_SUBJECTS.presenceUpdated, presence, ctx.requestId);
    }
    return after;
  });
}

/** Stored `offline` (an older choice) reads as invisible: both mean "show me offline". */
export function chosenStatus(stored: users.UserRow['status']): ChosenStatus {
  return stored === 'offline' ? 'invisible' : stored;
}
