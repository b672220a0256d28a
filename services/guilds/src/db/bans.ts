import { exec, type KeyPage, keysetPage, many, maybeOne, one, type Queryable } from '@chat/kit';
import type { Ban } from '../records.ts';

type BanRow = {
  server_id: string;
  user_id: string;
  banned_by: string;
  reason: string | null;
  created_at: string;
  username: string;
  display_name: string;
  avatar_url: string | null;
};

const toBan = (r: BanRow): Ban => ({
  serverId: r.server_id,
  userId: r.user_id,
  username: r.username,
  displayName: r.display_name,
  avatarUrl: r.avatar_url,
  bannedBy: r.banned_by,
  reason: r.reason,
  createdAt: r.created_at,
});

const SELECT_BAN = `SELECT b.server_id, b.user_id, b.banned_by, b.reason, b.created_at, u.username, u.display_name, u.avatar_url
  FROM bans b JOIN users u ON u.id = b.user_id`;

/** Creates or replaces the ban (a second PUT updates the reason, as in Discord). */
export async function upsertBan(
  db: Queryable,
  b: { serverId: string; userId: string; bannedBy: string; reason: string | null },
): Promise<Ban> {
  await exec(
    db,
    `INSERT INTO bans (server_id, user_id, banned_by, reason) VALUES ($1, $2, $3, $4)
     ON CONFLICT (server_id, user_id) DO UPDATE SET banned_by = EXCLUDED.banned_by, reason = EXCLUDED.reason`,
    [b.serverId, b.userId, b.bannedBy, b.reason],
  );
  return toBan(await one<BanRow>(db, `${SELECT_BAN} WHERE b.server_id = $1 AND b.user_id = $2`, [b.serverId, b.userId], 'Ban'));
}

export async function isBanned(db: Queryable, serverId: string, userId: string): Promise<boolean> {
  return Boolean(await maybeOne(db, 'SELECT 1 FROM bans WHERE server_id = $1 AND user_id = $2', [serverId, userId]));
}

export async function deleteBan(db: Queryable, serverId: string, userId: string): Promise<boolean> {
  return (await exec(db, 'DELETE FROM bans WHERE server_id = $1 AND user_id = $2', [serverId, userId])) === 1;
}

/** One page of the server's bans, by banned user id. */
export async function listBans(db: Queryable, serverId: string, page: KeyPage): Promise<Ban[]> {
  const k = keysetPage('b.user_id', page, 2);
  return k
    .finish(await many<BanRow>(db, `${SELECT_BAN} WHERE b.server_id = $1 AND ${k.where} ${k.orderLimit}`, [serverId, ...k.params]))
    .map(toBan);
}
