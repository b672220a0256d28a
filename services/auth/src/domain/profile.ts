import { AUTH_SUBJECTS, type SelfUser, type UpdateProfileBody, type User } from '@chat/contracts';
import { enqueueEvent, notFound, type RequestContext, withTx } from '@chat/kit';
import type { z } from 'zod';
import * as users from '../db/users.ts';
import type { AuthDomainDeps } from '../deps.ts';

async function accountOf(deps: Pick<AuthDomainDeps, 'pool'>, id: string): Promise<users.UserRow> {
  const row = await users.findUserById(deps.pool, id);
  if (!row) throw notFound('User');
  return row;
}

/** The caller's own account (with email and the status they chose). */
export async function getMe(deps: Pick<AuthDomainDeps, 'pool'>, id: string): Promise<z.input<typeof SelfUser>> {
  return users.toSelfUser(await accountOf(deps, id));
}

/** What anyone may see of a user. */
export async function getUser(deps: Pick<AuthDomainDeps, 'pool'>, id: string): Promise<z.input<typeof User>> {
  return users.toUser(await accountOf(deps, id));
}

/** Changes the caller's profile; a change that other services show (name, avatar) is announced. */
export async function updateMe(
  deps: Pick<AuthDomainDeps, 'pool'>,
  ctx: RequestContext,
  patch: UpdateProfileBody,
): Promise<z.input<typeof SelfUser>> {
  return withTx(deps.pool, async (tx) => {
    const before = await users.lockUser(tx, ctx.userId);
    const after = await users.updateProfile(tx, ctx.userId, patch);
    if (before.display_name !== after.display_name || before.avatar_url !== after.avatar_url) {
      await enqueueEvent(tx, AUTH_SUBJECTS.userUpdated, users.toUserEvent(after), ctx.requestId);
    }
    return users.toSelfUser(after);
  });
}

/** Whether the caller holds one of the founder badges. */
export async function founderStatus(deps: Pick<AuthDomainDeps, 'pool'>, id: string): Promise<{ isFounder: boolean }> {
  return { isFounder: (await accountOf(deps, id)).is_founder };
}
