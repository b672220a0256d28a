import type { Invite } from '@chat/contracts';
import { exec, type KeyPage, keysetPage, many, maybeOne, one, type Queryable } from '@chat/kit';

type InviteRow = {
  code: string;
  server_id: string;
  inviter_id: string;
  uses: number;
  max_uses: number;
  expires_at: string | null;
  created_at: string;
};

const COLUMNS = 'code, server_id, inviter_id, uses, max_uses, expires_at, created_at';
/** An invite that can still be used: not expired, not used up. */
const USABLE = '(expires_at IS NULL OR expires_at > now()) AND (max_uses = 0 OR uses < max_uses)';

const toInvite = (r: InviteRow): Invite => ({
  code: r.code,
  serverId: r.server_id,
  inviterId: r.inviter_id,
  uses: r.uses,
  maxUses: r.max_uses,
  expiresAt: r.expires_at,
  createdAt: r.created_at,
});

export async function insertInvite(
  db: Queryable,
  i: { code: string; serverId: string; inviterId: string; maxUses: number; maxAgeSeconds: number },
): Promise<Invite> {
  const row = await one<InviteRow>(
    db,
    `INSERT INTO invites (code, server_id, inviter_id, max_uses, expires_at)
     VALUES ($1, $2, $3, $4, CASE WHEN $5::int = 0 THEN NULL ELSE now() + make_interval(secs => $5::int) END)
     RETURNING ${COLUMNS}`,
    [i.code, i.serverId, i.inviterId, i.maxUses, i.maxAgeSeconds],
  );
  return toInvite(row);
}

export async function findUsableInvite(db: Queryable, code: string): Promise<Invite | undefined> {
  const row = await maybeOne<InviteRow>(db, `SELECT ${COLUMNS} FROM invites WHERE code = $1 AND ${USABLE}`, [code]);
  return row && toInvite(row);
}

export async function findInvite(db: Queryable, code: string): Promise<Invite | undefined> {
  const row = await maybeOne<InviteRow>(db, `SELECT ${COLUMNS} FROM invites WHERE code = $1`, [code]);
  return row && toInvite(row);
}

/** Takes one use if the invite is still usable; the row lock makes concurrent accepts count right. */
export async function consumeInvite(db: Queryable, code: string): Promise<Invite | undefined> {
  const row = await maybeOne<InviteRow>(db, `UPDATE invites SET uses = uses + 1 WHERE code = $1 AND ${USABLE} RETURNING ${COLUMNS}`, [
    code,
  ]);
  return row && toInvite(row);
}

/** One page of the server's invites, by code. */
export async function listInvites(db: Queryable, serverId: string, page: KeyPage): Promise<Invite[]> {
  const k = keysetPage('code', page, 2, 'text');
  const rows = await many<InviteRow>(db, `SELECT ${COLUMNS} FROM invites WHERE server_id = $1 AND ${k.where} ${k.orderLimit}`, [
    serverId,
    ...k.params,
  ]);
  return k.finish(rows).map(toInvite);
}

export function deleteInvite(db: Queryable, code: string): Promise<number> {
  return exec(db, 'DELETE FROM invites WHERE code = $1', [code]);
}
