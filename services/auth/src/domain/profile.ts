import { AUTH_SUBJECTS, type ChosenStatus, REALTIME_SUBJECTS, type SelfUser, type UpdateProfileBody, type User } from '@chat/contracts';
import { enqueueEvent, notFound, type RequestContext, seenStatuses, withTx } from '@chat/kit';
import type { z } from 'zod';
import * as users from '../db/users.ts';
import type { AuthDeps, AuthDomainDeps } from '../deps.ts';
import { announceAccountUpdate } from './account-updates.ts';
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
    if (ACCOUNT_FIELDS.some((field) => before[field] !== after[field])) await announceAccountUpdate(tx, after.id, ctx.requestId);
    return after;
  });
}

/** What the owner's other sessions show of their account and a PATCH of the profile can change. */
const ACCOUNT_FIELDS = ['display_name', 'avatar_url', 'bio', 'status', 'custom_status'] as const;

/** Stored `offline` (an older choice) reads as invisible: both mean "show me offline". */
export function chosenStatus(stored: users.UserRow['status']): ChosenStatus {
  return stored === 'offline' ? 'invisible' : stored;
}

/** The caller's own account (with email and the status they chose), as the contract shows it. */
export async function getMe(deps: Pick<AuthDomainDeps, 'pool' | 'config'>, id: string): Promise<z.input<typeof SelfUser>> {
  return users.toSelfUser(await getUser(deps, id), badgePolicy(deps.config));
}

/**
 * What anyone may see of a user, with the status the caller may see now: auth stores only the
 * choice, the gateway knows who is connected and who knows whom (offline to a stranger, as the
 * socket tells strangers nothing; offline too when it does not answer).
 */
export async function getPublicUser(
  deps: Pick<AuthDeps, 'pool' | 'config' | 'bus'>,
  ctx: Pick<RequestContext, 'requestId' | 'userId'>,
  id: string,
): Promise<z.input<typeof User>> {
  const row = await getUser(deps, id);
  const seen = await seenStatuses(deps.bus, [row.id], ctx.requestId, { viewerId: ctx.userId });
  return users.toUser(row, badgePolicy(deps.config), seen(row.id));
}

/** Changes the caller's profile and answers it as its owner sees it. */
export async function updateMyProfile(
  deps: Pick<AuthDomainDeps, 'pool' | 'config'>,
  ctx: RequestContext,
  patch: UpdateProfileBody,
): Promise<z.input<typeof SelfUser>> {
  return users.toSelfUser(await updateMe(deps, ctx, patch), badgePolicy(deps.config));
}

/** Whether the caller holds one of the founder badges. */
export async function founderStatus(deps: Pick<AuthDomainDeps, 'pool'>, id: string): Promise<{ isFounder: boolean }> {
  return { isFounder: (await getUser(deps, id)).is_founder };
}
