import { conflict, type Queryable } from '@chat/kit';
import { deleteMember, insertMember } from '../db/members.ts';
import { addToMemberCount } from '../db/servers.ts';
import { type Ctx, emit } from './context.ts';
import { postMemberJoin } from './system-messages.ts';
import { endVoiceOfRemovedMember } from './voice.ts';

/**
 * Every way in (create, join, invite, approved request) and every way out (leave, kick, ban) goes
 * through these two, so the member count and the events never drift from the members table.
 */
export async function addMember(tx: Queryable, ctx: Ctx, serverId: string, userId: string): Promise<void> {
  if (!(await insertMember(tx, serverId, userId))) throw conflict('Already a member of this server');
  await addToMemberCount(tx, serverId, 1);
  await emit(tx, ctx, 'guilds.member.joined', { serverId, userId });
  await postMemberJoin(tx, ctx, serverId, userId);
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
