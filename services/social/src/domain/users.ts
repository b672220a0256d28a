import { type Bus, lookupUserFromAuth, type Pool, type RequestContext } from '@chat/kit';
import { findUserById, findUserByUsername, type KnownUser, knownUserIds, upsertUser } from '../db/users.ts';

type Deps = { pool: Pool; bus: Bus };

/**
 * A user by id or username: from the read-model, or, on a miss (auth's event still in flight or
 * the consumer behind), from auth over `rpc.auth.user.lookup`, whose answer is stored. Undefined
 * only when auth does not know the user either.
 */
export async function findOrLearnUser(
  deps: Deps,
  ctx: Pick<RequestContext, 'requestId'>,
  ref: { userId?: string | undefined; username?: string | undefined },
): Promise<KnownUser | undefined> {
  const local = ref.userId ? await findUserById(deps.pool, ref.userId) : await findUserByUsername(deps.pool, ref.username ?? '');
  if (local) return local;
  if (!ref.userId && !ref.username) return undefined;
  const found = await lookupUserFromAuth(deps.bus, ref.userId ? { id: ref.userId } : { username: ref.username! }, ctx.requestId);
  if (!found) return undefined;
  await upsertUser(deps.pool, found.user, found.version);
  const { id, username, displayName, avatarUrl } = found.user;
  return { id, username, displayName, avatarUrl };
}

/** Which of these ids are users: the read-model's, plus those auth knows (learnt and stored). */
export async function knownOrLearntUserIds(deps: Deps, ctx: Pick<RequestContext, 'requestId'>, ids: string[]): Promise<Set<string>> {
  const known = await knownUserIds(deps.pool, ids);
  for (const id of ids) {
    if (!known.has(id) && (await findOrLearnUser(deps, ctx, { userId: id }))) known.add(id);
  }
  return known;
}
