import { AUTH_SUBJECTS, BADGES, type Badge } from '@chat/contracts';
import { enqueueEvent, notFound, type Pool, type Queryable, withTx } from '@chat/kit';
import type { AuthConfig } from '../config.ts';
import { ownsServerWithMembers } from '../db/guilds.ts';
import * as users from '../db/users.ts';
import { announceAccountUpdate } from './account-updates.ts';

/** Badges: facts about a user that auth computes and announces with the user's other fields. */

export const badgePolicy = (config: Pick<AuthConfig, 'EARLY_SUPPORTER_BEFORE'>): users.BadgePolicy => ({
  earlySupporterBefore: config.EARLY_SUPPORTER_BEFORE,
});

export const badgeCatalogue = (): Badge[] => [...BADGES];

export async function badgesOfUser(deps: { pool: Pool; config: AuthConfig }, userId: string): Promise<Badge[]> {
  const user = await users.findUserById(deps.pool, userId);
  if (!user) throw notFound('User');
  return users.badgesOf(user, badgePolicy(deps.config));
}

/**
 * Recomputes the server-owner badge of `userId` from the guilds read-model; a change is written
 * and announced (`auth.user.updated`, whose badges feed every read-model of users).
 */
export async function refreshServerOwnerBadge(
  tx: Queryable,
  config: Pick<AuthConfig, 'SERVER_OWNER_BADGE_MEMBERS' | 'EARLY_SUPPORTER_BEFORE'>,
  userId: string,
  requestId?: string,
): Promise<void> {
  const owns = await ownsServerWithMembers(tx, userId, config.SERVER_OWNER_BADGE_MEMBERS);
  const changed = await users.setServerOwner(tx, userId, owns);
  if (!changed) return;
  await enqueueEvent(tx, AUTH_SUBJECTS.userUpdated, users.toUserEvent(changed, badgePolicy(config)), requestId);
  await announceAccountUpdate(tx, userId, requestId);
}

export type StaffOutcome = 'granted' | 'revoked' | 'unchanged' | 'unknown user';

/** Grants or revokes the staff badge (operator command only); a change is announced. */
export async function setStaffBadge(deps: { pool: Pool; config: AuthConfig }, login: string, staff: boolean): Promise<StaffOutcome> {
  return withTx(deps.pool, async (tx) => {
    const change = await users.setStaff(tx, login, staff);
    if (!change) return 'unknown user';
    if (change.before.is_staff === staff) return 'unchanged';
    await enqueueEvent(tx, AUTH_SUBJECTS.userUpdated, users.toUserEvent(change.after, badgePolicy(deps.config)));
    await announceAccountUpdate(tx, change.after.id);
    return staff ? 'granted' : 'revoked';
  });
}
