import type { Member } from '@chat/contracts';
import { badRequest, conflict, type Queryable } from '@chat/kit';
import { approvePendingOf } from '../db/join-requests.ts';
import { countServersOf, deleteMember, findMember, insertMember, lockMembershipsOf } from '../db/members.ts';
import { addToMemberCount } from '../db/servers.ts';
import { type Ctx, emit } from './context.ts';
import { postMemberJoin } from './system-messages.ts';
import { endVoiceOfRemovedMember } from './voice.ts';

/** Discord's limit of servers one user may be in, owned ones included. */
const MAX_SERVERS_PER_USER = 100;

/**
 * Every way into a server comes through addMember, which asks this first: the user's ways in take
 * turns on their lock (taken after the server's locks), so concurrent ones cannot pass the limit together.
 */
async function requireRoomForServer(tx: Queryable, ctx: Ctx, userId: string): Promise<void> {
  await lockMembershipsOf(tx, userId);
  if ((await countServersOf(tx, userId)) < MAX_SERVERS_PER_USER) return;
  const who = userId === ctx.userId ? 'You are' : 'That user is';
  throw badRequest(`${who} in ${MAX_SERVERS_PER_USER} servers already, the most a user may be in`);
}

/**
 * Every way in (create, join, invite, approved request) and every way out (leave, kick, ban) goes
 * through these two, so the member count and the events never drift from the members table.
 */
export async function addMember(tx: Queryable, ctx: Ctx, serverId: string, userId: string): Promise<void> {
  await requireRoomForServer(tx, ctx, userId);
  if (!(await insertMember(tx, serverId, userId))) throw conflict('Already a member of this server');
  await addToMemberCount(tx, serverId, 1);
  await emit(tx, ctx, 'guilds.member.joined', announcedMember((await findMember(tx, serverId, userId))!));
  await settleJoinRequestOf(tx, ctx, serverId, userId);
  await postMemberJoin(tx, ctx, serverId, userId);
}

/**
 * A member as their join and update events carry them: REST's record less what others see of them
 * now (status, activity), which the gateway adds when it dispatches.
 */
export function announcedMember({ serverId, userId, nickname, roleIds, joinedAt, user }: Member) {
  return { serverId, userId, nickname, roleIds, joinedAt, user };
}

/**
 * A member has nothing left to ask: a request still pending (they came in by an invite) is approved
 * now, as moderators then see, so that approving it after they left cannot pull them back in, and
 * they may ask again.
 */
async function settleJoinRequestOf(tx: Queryable, ctx: Ctx, serverId: string, userId: string): Promise<void> {
  for (const request of await approvePendingOf(tx, serverId, userId)) {
    await emit(tx, ctx, 'guilds.joinrequest.reviewed', request);
  }
}

/**
 * Removes the member if they are one, ending their voice state in the server first (a state belongs
 * to a member: migration 0214); answers whether they were.
 */
export async function removeMember(
  tx: Queryable,
  ctx: Ctx,
  serverId: string,
  userId: string,
  reason: 'left' | 'kicked' | 'banned',
): Promise<boolean> {
  await endVoiceOfRemovedMember(tx, ctx, serverId, userId);
  if (!(await deleteMember(tx, serverId, userId))) return false;
  await addToMemberCount(tx, serverId, -1);
  await emit(tx, ctx, 'guilds.member.left', { serverId, userId, reason, by: reason === 'left' ? null : ctx.userId });
  return true;
}
