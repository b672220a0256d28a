import type { UserSummary } from '@chat/contracts';
import { exec, type KeyPage, keysetPage, many, maybeOne, one, prepared, type Queryable } from '@chat/kit';
import { joinUserByKey, toUserSummary, USER_SUMMARY_COLUMNS } from './users.ts';

/** Friend requests, friendships and blocks between two users. */

/** One key per unordered pair of users. */
export const pairKey = (a: string, b: string): string => (a < b ? `${a}:${b}` : `${b}:${a}`);

/**
 * Serialises every change between one pair of users (two people asking each other at once must
 * end as friends, not as two crossed requests). Held until the transaction ends.
 */
export async function lockPair(tx: Queryable, a: string, b: string): Promise<void> {
  await tx.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [pairKey(a, b)]);
}

/**
 * SQL condition: the message `alias` is not from someone the viewer (`viewer`, a parameter) blocked.
 * A blocker never sees the messages of the people they blocked (issue 16); unblocking shows them again.
 */
export const NOT_FROM_BLOCKED = (alias: string, viewer: string) =>
  `NOT EXISTS (SELECT 1 FROM blocks bl WHERE bl.blocker_id = ${viewer} AND bl.blocked_id = ${alias}.sender_id)`;

/** Where `me` stands with `other`. */
export type Relation = { friends: boolean; outgoing: boolean; incoming: boolean; iBlocked: boolean; blockedMe: boolean };

export async function relationBetween(db: Queryable, me: string, other: string): Promise<Relation> {
  const row = await one<{ friends: boolean; outgoing: boolean; incoming: boolean; i_blocked: boolean; blocked_me: boolean }>(
    db,
    `SELECT
       EXISTS (SELECT 1 FROM friendships WHERE user_id = $1 AND friend_id = $2) AS friends,
       EXISTS (SELECT 1 FROM friend_requests WHERE requester_id = $1 AND recipient_id = $2) AS outgoing,
       EXISTS (SELECT 1 FROM friend_requests WHERE requester_id = $2 AND recipient_id = $1) AS incoming,
       EXISTS (SELECT 1 FROM blocks WHERE blocker_id = $1 AND blocked_id = $2) AS i_blocked,
       EXISTS (SELECT 1 FROM blocks WHERE blocker_id = $2 AND blocked_id = $1) AS blocked_me`,
    [me, other],
  );
  return { friends: row.friends, outgoing: row.outgoing, incoming: row.incoming, iBlocked: row.i_blocked, blockedMe: row.blocked_me };
}

/** Whether either of the two blocked the other. */
export async function blockedEitherWay(db: Queryable, a: string, b: string): Promise<boolean> {
  const row = await one<{ blocked: boolean }>(
    db,
    `SELECT EXISTS (SELECT 1 FROM blocks WHERE (blocker_id = $1 AND blocked_id = $2) OR (blocker_id = $2 AND blocked_id = $1)) AS blocked`,
    [a, b],
  );
  return row.blocked;
}

export async function insertRequest(tx: Queryable, requesterId: string, recipientId: string): Promise<string> {
  const row = await one<{ created_at: string }>(
    tx,
    'INSERT INTO friend_requests (requester_id, recipient_id) VALUES ($1, $2) RETURNING created_at',
    [requesterId, recipientId],
  );
  return row.created_at;
}

/** Answers whether there was such a request. */
export async function deleteRequest(tx: Queryable, requesterId: string, recipientId: string): Promise<boolean> {
  return (await exec(tx, 'DELETE FROM friend_requests WHERE requester_id = $1 AND recipient_id = $2', [requesterId, recipientId])) > 0;
}

/** Both sides' rows, with one timestamp. */
export async function insertFriendship(tx: Queryable, a: string, b: string): Promise<string> {
  const row = await one<{ created_at: string }>(
    tx,
    `INSERT INTO friendships (user_id, friend_id, created_at) VALUES ($1, $2, now()), ($2, $1, now()) RETURNING created_at`,
    [a, b],
  );
  return row.created_at;
}

/** Answers whether they were friends. */
export async function deleteFriendship(tx: Queryable, a: string, b: string): Promise<boolean> {
  const removed = await exec(tx, 'DELETE FROM friendships WHERE (user_id = $1 AND friend_id = $2) OR (user_id = $2 AND friend_id = $1)', [
    a,
    b,
  ]);
  return removed > 0;
}

/** The new block's timestamp, or undefined when it already existed. */
export async function insertBlock(tx: Queryable, blockerId: string, blockedId: string): Promise<string | undefined> {
  const row = await maybeOne<{ created_at: string }>(
    tx,
    'INSERT INTO blocks (blocker_id, blocked_id) VALUES ($1, $2) ON CONFLICT DO NOTHING RETURNING created_at',
    [blockerId, blockedId],
  );
  return row?.created_at;
}

/** Answers when the block was made (its record as the blocked list showed it), undefined when there was none. */
export async function deleteBlock(tx: Queryable, blockerId: string, blockedId: string): Promise<string | undefined> {
  const row = await maybeOne<{ created_at: string }>(
    tx,
    'DELETE FROM blocks WHERE blocker_id = $1 AND blocked_id = $2 RETURNING created_at',
    [blockerId, blockedId],
  );
  return row?.created_at;
}

type ListedUserRow = {
  user_id: string;
  created_at: string;
  username: string | null;
  display_name: string | null;
  avatar_url: string | null;
};
export type ListedUser = { user: UserSummary; createdAt: string };

const toListed = (row: ListedUserRow): ListedUser => ({ user: toUserSummary(row.user_id, row), createdAt: row.created_at });

/** One page of the user's friends, by friend's user id. */
export async function listFriends(db: Queryable, me: string, page: KeyPage): Promise<ListedUser[]> {
  const k = keysetPage('f.friend_id', page, 2);
  const rows = await many<ListedUserRow>(
    db,
    prepared(`SELECT f.friend_id AS user_id, f.created_at, ${USER_SUMMARY_COLUMNS}
     FROM friendships f ${joinUserByKey('f.friend_id')}
     WHERE f.user_id = $1 AND ${k.where} ${k.orderLimit}`),
    [me, ...k.params],
  );
  return k.finish(rows).map(toListed);
}

/** One page of the users the user blocked, by blocked user id. */
export async function listBlocked(db: Queryable, me: string, page: KeyPage): Promise<ListedUser[]> {
  const k = keysetPage('b.blocked_id', page, 2);
  const rows = await many<ListedUserRow>(
    db,
    `SELECT b.blocked_id AS user_id, b.created_at, ${USER_SUMMARY_COLUMNS}
     FROM blocks b ${joinUserByKey('b.blocked_id')}
     WHERE b.blocker_id = $1 AND ${k.where} ${k.orderLimit}`,
    [me, ...k.params],
  );
  return k.finish(rows).map(toListed);
}

export type PendingRequest = ListedUser & { direction: 'incoming' | 'outgoing' };

/** One page of the pending requests, both directions, by the other user's id (one request per pair). */
export async function listRequests(db: Queryable, me: string, page: KeyPage): Promise<PendingRequest[]> {
  const k = keysetPage('r.user_id', page, 2);
  const rows = await many<ListedUserRow & { direction: 'incoming' | 'outgoing' }>(
    db,
    `SELECT r.user_id, r.direction, r.created_at, ${USER_SUMMARY_COLUMNS}
     FROM (SELECT recipient_id AS user_id, 'outgoing' AS direction, created_at FROM friend_requests WHERE requester_id = $1
           UNION ALL
           SELECT requester_id, 'incoming', created_at FROM friend_requests WHERE recipient_id = $1) r
     ${joinUserByKey('r.user_id')}
     WHERE ${k.where} ${k.orderLimit}`,
    [me, ...k.params],
  );
  return k.finish(rows).map((row) => ({ ...toListed(row), direction: row.direction }));
}
