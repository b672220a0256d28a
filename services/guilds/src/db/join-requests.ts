import type { JoinRequest } from '@chat/contracts';
import { type KeyPage, keysetPage, many, maybeOne, one, type Queryable } from '@chat/kit';

type JoinRequestRow = {
  id: string;
  server_id: string;
  user_id: string;
  message: string | null;
  status: JoinRequest['status'];
  reviewed_by: string | null;
  reviewed_at: string | null;
  created_at: string;
};

const COLUMNS = 'id, server_id, user_id, message, status, reviewed_by, reviewed_at, created_at';

const toJoinRequest = (r: JoinRequestRow): JoinRequest => ({
  id: r.id,
  serverId: r.server_id,
  userId: r.user_id,
  message: r.message,
  status: r.status,
  reviewedBy: r.reviewed_by,
  reviewedAt: r.reviewed_at,
  createdAt: r.created_at,
});

/** A second pending request of the same user breaks the partial unique index: a 409. */
export async function insertJoinRequest(
  db: Queryable,
  r: { id: string; serverId: string; userId: string; message: string | null },
): Promise<JoinRequest> {
  const row = await one<JoinRequestRow>(
    db,
    `INSERT INTO join_requests (id, server_id, user_id, message) VALUES ($1, $2, $3, $4) RETURNING ${COLUMNS}`,
    [r.id, r.serverId, r.userId, r.message],
  );
  return toJoinRequest(row);
}

/** One page of the server's join requests of one status, by request id. */
export async function listJoinRequests(
  db: Queryable,
  serverId: string,
  status: JoinRequest['status'],
  page: KeyPage,
): Promise<JoinRequest[]> {
  const k = keysetPage('id', page, 3);
  const rows = await many<JoinRequestRow>(
    db,
    `SELECT ${COLUMNS} FROM join_requests WHERE server_id = $1 AND status = $2 AND ${k.where} ${k.orderLimit}`,
    [serverId, status, ...k.params],
  );
  return k.finish(rows).map(toJoinRequest);
}

export async function listJoinRequestsOfUser(db: Queryable, userId: string): Promise<JoinRequest[]> {
  const rows = await many<JoinRequestRow>(
    db,
    `SELECT ${COLUMNS} FROM join_requests WHERE user_id = $1 ORDER BY created_at DESC, id DESC LIMIT 100`,
    [userId],
  );
  return rows.map(toJoinRequest);
}

export async function lockJoinRequest(db: Queryable, serverId: string, id: string): Promise<JoinRequest | undefined> {
  const row = await maybeOne<JoinRequestRow>(db, `SELECT ${COLUMNS} FROM join_requests WHERE id = $1 AND server_id = $2 FOR UPDATE`, [
    id,
    serverId,
  ]);
  return row && toJoinRequest(row);
}

export async function reviewJoinRequest(
  db: Queryable,
  id: string,
  status: 'approved' | 'rejected',
  reviewedBy: string,
): Promise<JoinRequest> {
  const row = await one<JoinRequestRow>(
    db,
    `UPDATE join_requests SET status = $2, reviewed_by = $3, reviewed_at = now() WHERE id = $1 RETURNING ${COLUMNS}`,
    [id, status, reviewedBy],
  );
  return toJoinRequest(row);
}

/** Joining by any way answers the user's pending request: approved, by no one (reviewed_by stays null). */
export async function approvePendingOf(db: Queryable, serverId: string, userId: string): Promise<JoinRequest[]> {
  const rows = await many<JoinRequestRow>(
    db,
    `UPDATE join_requests SET status = 'approved', reviewed_at = now()
     WHERE server_id = $1 AND user_id = $2 AND status = 'pending' RETURNING ${COLUMNS}`,
    [serverId, userId],
  );
  return rows.map(toJoinRequest);
}

/** A ban also turns down what the banned user still has pending. */
export async function rejectPendingOf(db: Queryable, serverId: string, userId: string, reviewedBy: string): Promise<JoinRequest[]> {
  const rows = await many<JoinRequestRow>(
    db,
    `UPDATE join_requests SET status = 'rejected', reviewed_by = $3, reviewed_at = now()
     WHERE server_id = $1 AND user_id = $2 AND status = 'pending' RETURNING ${COLUMNS}`,
    [serverId, userId, reviewedBy],
  );
  return rows.map(toJoinRequest);
}
