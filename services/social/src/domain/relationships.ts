import {
  type Activity,
  type BlockEvent,
  type FriendAcceptedEvent,
  type FriendRemovedEvent,
  type FriendRequestBody,
  type FriendRequestedEvent,
  SOCIAL_SUBJECTS,
  type UserSummary,
} from '@chat/contracts';
import {
  type Bus,
  badRequest,
  conflict,
  enqueueEvent,
  forbidden,
  type KeyPage,
  notFound,
  type Pool,
  type Queryable,
  type RequestContext,
  withTx,
} from '@chat/kit';
import { activitiesOf } from '../db/games.ts';
import {
  deleteBlock,
  deleteFriendship,
  deleteRequest,
  insertBlock,
  insertFriendship,
  insertRequest,
  type ListedUser,
  listBlocked,
  listFriends,
  listRequests,
  lockPair,
  type PendingRequest,
  relationBetween,
} from '../db/relationships.ts';
import { type KnownUser, knownToSummary, summaryOf } from '../db/users.ts';
import { leaveDirectCallWith } from './calls.ts';
import { friendRequestEnded } from './notifications.ts';
import { shownActivity, withSeenStatus } from './presence.ts';
import { findOrLearnUser } from './users.ts';

/** Friend requests, friendships and blocks: the rules between two users. */

type Deps = { pool: Pool; bus: Bus; clock?: () => Date };

/** Runs a change between the caller and `other` in one transaction that holds the pair's lock. */
function inPairTx<T>(deps: Deps, ctx: RequestContext, other: string, fn: (tx: Queryable) => Promise<T>): Promise<T> {
  return withTx(deps.pool, async (tx) => {
    await lockPair(tx, ctx.userId, other);
    return fn(tx);
  });
}

/** A user the caller names: known to the read-model and not the caller. */
async function otherUser(deps: Deps, ctx: RequestContext, ref: { userId?: string; username?: string | undefined }): Promise<KnownUser> {
  if (ref.userId === ctx.userId) throw badRequest('That is you');
  const user = await findOrLearnUser(deps, ctx, ref);
  if (!user) throw notFound('User');
  if (user.id === ctx.userId) throw badRequest('That is you');
  return user;
}

export type FriendRequestOutcome = { status: 'pending' | 'accepted'; user: UserSummary };

/**
 * Asks `target` to be friends. If they had asked the caller already, this accepts their request.
 * Someone who blocked the caller is answered like an unknown user, so a block stays private.
 */
export async function sendFriendRequest(deps: Deps, ctx: RequestContext, body: FriendRequestBody): Promise<FriendRequestOutcome> {
  const target = await otherUser(deps, ctx, body);
  return inPairTx(deps, ctx, target.id, async (tx) => {
    const relation = await relationBetween(tx, ctx.userId, target.id);
    if (relation.blockedMe) throw notFound('User');
    if (relation.iBlocked) throw forbidden('You have blocked this user; unblock them first');
    if (relation.friends) throw conflict('You are already friends');
    if (relation.outgoing) throw conflict('You have already sent this user a friend request');
    if (relation.incoming) {
      await becomeFriends(tx, ctx, target.id);
      return { status: 'accepted' as const, user: knownToSummary(target) };
    }
    const createdAt = await insertRequest(tx, ctx.userId, target.id);
    const data: FriendRequestedEvent = {
      requesterId: ctx.userId,
      recipientId: target.id,
      createdAt,
      requester: await summaryOf(tx, ctx.userId),
      recipient: knownToSummary(target),
    };
    await enqueueEvent(tx, SOCIAL_SUBJECTS.friendRequested, data, ctx.requestId);
    return { status: 'pending' as const, user: knownToSummary(target) };
  }).then(async (outcome) => {
    // Until they accept, the target may be a stranger to the caller: the gateway answers for the caller.
    const seenBy = outcome.status === 'pending' ? { viewerId: ctx.userId } : {};
    return (await withSeenStatus(deps.bus, [outcome], seenBy))[0] as FriendRequestOutcome;
  });
}

/** Turns `requesterId`'s pending request to the caller into a friendship. */
async function becomeFriends(tx: Queryable, ctx: RequestContext, requesterId: string): Promise<string> {
  if (!(await deleteRequest(tx, requesterId, ctx.userId))) throw notFound('Friend request');
  const createdAt = await insertFriendship(tx, requesterId, ctx.userId);
  const data: FriendAcceptedEvent = {
    requesterId,
    recipientId: ctx.userId,
    createdAt,
    requester: await summaryOf(tx, requesterId),
    recipient: await summaryOf(tx, ctx.userId),
  };
  await enqueueEvent(tx, SOCIAL_SUBJECTS.friendAccepted, data, ctx.requestId);
  return createdAt;
}

export async function acceptFriendRequest(deps: Deps, ctx: RequestContext, requesterId: string): Promise<ListedUser> {
  const createdAt = await inPairTx(deps, ctx, requesterId, (tx) => becomeFriends(tx, ctx, requesterId));
  return (await withSeenStatus(deps.bus, [{ user: await summaryOf(deps.pool, requesterId), createdAt }]))[0] as ListedUser;
}

export async function declineFriendRequest(deps: Deps, ctx: RequestContext, requesterId: string): Promise<void> {
  await inPairTx(deps, ctx, requesterId, async (tx) => {
    if (!(await deleteRequest(tx, requesterId, ctx.userId))) throw notFound('Friend request');
    await announceRemoval(tx, ctx, { otherUserId: requesterId, relation: 'request', reason: 'declined' });
  });
}

export async function cancelFriendRequest(deps: Deps, ctx: RequestContext, recipientId: string): Promise<void> {
  await inPairTx(deps, ctx, recipientId, async (tx) => {
    if (!(await deleteRequest(tx, ctx.userId, recipientId))) throw notFound('Friend request');
    await announceRemoval(tx, ctx, { otherUserId: recipientId, relation: 'request', reason: 'cancelled' });
  });
}

export async function removeFriend(deps: Deps, ctx: RequestContext, friendId: string): Promise<void> {
  await inPairTx(deps, ctx, friendId, async (tx) => {
    if (!(await deleteFriendship(tx, ctx.userId, friendId))) throw notFound('Friend');
    await announceRemoval(tx, ctx, { otherUserId: friendId, relation: 'friend', reason: 'unfriended' });
  });
}

/** Blocks `userId`: the friendship, pending requests both ways and the blocker's part in a call of the two end with it. */
export async function blockUser(deps: Deps, ctx: RequestContext, userId: string): Promise<ListedUser> {
  const target = await otherUser(deps, ctx, { userId });
  return inPairTx(deps, ctx, target.id, async (tx) => {
    const createdAt = await insertBlock(tx, ctx.userId, target.id);
    if (!createdAt) throw conflict('You have already blocked this user');
    const removal = { otherUserId: target.id, reason: 'blocked' } as const;
    if (await deleteFriendship(tx, ctx.userId, target.id)) {
      await announceRemoval(tx, ctx, { ...removal, relation: 'friend', reasonShownToOther: 'unfriended' });
    }
    // At most one of the two exists: a request answered by one back is a friendship.
    if (await deleteRequest(tx, ctx.userId, target.id)) {
      await announceRemoval(tx, ctx, { ...removal, relation: 'request', reasonShownToOther: 'cancelled' });
    }
    if (await deleteRequest(tx, target.id, ctx.userId)) {
      await announceRemoval(tx, ctx, { ...removal, relation: 'request', reasonShownToOther: 'declined' });
    }
    await leaveDirectCallWith(tx, ctx, target.id, deps.clock?.() ?? new Date());
    const data: BlockEvent = { userId: ctx.userId, blockedUserId: target.id, blockedUser: knownToSummary(target), createdAt };
    await enqueueEvent(tx, SOCIAL_SUBJECTS.blockCreated, data, ctx.requestId);
    return { user: knownToSummary(target), createdAt };
  });
}

export async function unblockUser(deps: Deps, ctx: RequestContext, userId: string): Promise<void> {
  await inPairTx(deps, ctx, userId, async (tx) => {
    const createdAt = await deleteBlock(tx, ctx.userId, userId);
    if (!createdAt) throw notFound('Block');
    const data: BlockEvent = { userId: ctx.userId, blockedUserId: userId, blockedUser: await summaryOf(tx, userId), createdAt };
    await enqueueEvent(tx, SOCIAL_SUBJECTS.blockRemoved, data, ctx.requestId);
  });
}

/** A friendship or request between the caller and `otherUserId` ended: both users as lists show them. */
async function announceRemoval(
  tx: Queryable,
  ctx: RequestContext,
  removal: Pick<FriendRemovedEvent, 'otherUserId' | 'relation' | 'reason' | 'reasonShownToOther'>,
): Promise<void> {
  const [user, otherUser] = [await summaryOf(tx, ctx.userId), await summaryOf(tx, removal.otherUserId)];
  const data: FriendRemovedEvent = { userId: ctx.userId, ...removal, user, otherUser };
  await enqueueEvent(tx, SOCIAL_SUBJECTS.friendRemoved, data, ctx.requestId);
  // As on Discord, a request that is gone no longer waits in the recipient's feed.
  if (removal.relation === 'request') await friendRequestEnded(tx, ctx.userId, removal.otherUserId, ctx.requestId);
}

/** The caller's friends, each with what others see of them now and what they are playing (one query for all). */
export async function friendsOf(deps: Deps, ctx: RequestContext, page: KeyPage): Promise<(ListedUser & { activity?: Activity })[]> {
  const friends = await withSeenStatus(deps.bus, await listFriends(deps.pool, ctx.userId, page));
  const activities = await activitiesOf(
    deps.pool,
    friends.map((f) => f.user.id),
  );
  return friends.map((f) => ({ ...f, ...shownActivity(f.user.status, activities.get(f.user.id)) }));
}
/** Blocked users and pending requests may be strangers: each shows as the gateway shows it to the caller. */
export const blockedBy = async (deps: Deps, ctx: RequestContext, page: KeyPage): Promise<ListedUser[]> =>
  withSeenStatus(deps.bus, await listBlocked(deps.pool, ctx.userId, page), { viewerId: ctx.userId });
export const pendingRequestsOf = async (deps: Deps, ctx: RequestContext, page: KeyPage): Promise<PendingRequest[]> =>
  withSeenStatus(deps.bus, await listRequests(deps.pool, ctx.userId, page), { viewerId: ctx.userId });
