import type { Role } from '@chat/contracts';
import { exec, many, maybeOne, one, type Queryable } from '@chat/kit';
import { setClause } from './sql.ts';

type RoleRow = {
  id: string;
  server_id: string;
  name: string;
  color: number;
  permissions: number;
  position: number;
  hoist: boolean;
  mentionable: boolean;
  created_at: string;
};

const COLUMNS = 'id, server_id, name, color, permissions, position, hoist, mentionable, created_at';

const toRole = (r: RoleRow): Role => ({
  id: r.id,
  serverId: r.server_id,
  name: r.name,
  color: r.color,
  permissions: r.permissions,
  position: r.position,
  hoist: r.hoist,
  mentionable: r.mentionable,
  createdAt: r.created_at,
});

/** @everyone: id = the server's id, position 0. */
export async function insertEveryoneRole(db: Queryable, serverId: string, permissions: bigint): Promise<Role> {
  const row = await one<RoleRow>(
    db,
    `INSERT INTO roles (id, server_id, name, permissions, position) VALUES ($1, $1, '@everyone', $2, 0) RETURNING ${COLUMNS}`,
    [serverId, permissions.toString()],
  );
  return toRole(row);
}

export interface NewRole {
  id: string;
  serverId: string;
  name: string;
  color: number;
  permissions: bigint;
  hoist: boolean;
  mentionable: boolean;
}

/** Discord puts a new role just above @everyone: every other role moves up one (`shifted`, as they are now). */
export async function insertRoleAtBottom(db: Queryable, r: NewRole): Promise<{ role: Role; shifted: Role[] }> {
  const shifted = await shiftRoles(db, 'position = position + 1 WHERE server_id = $1 AND position >= 1', [r.serverId]);
  const row = await one<RoleRow>(
    db,
    `INSERT INTO roles (id, server_id, name, color, permissions, position, hoist, mentionable)
     VALUES ($1, $2, $3, $4, $5, 1, $6, $7) RETURNING ${COLUMNS}`,
    [r.id, r.serverId, r.name, r.color, r.permissions.toString(), r.hoist, r.mentionable],
  );
  return { role: toRole(row), shifted };
}

/** Runs `UPDATE roles SET <change>`; answers the roles it moved, as they are now, lowest first. */
async function shiftRoles(db: Queryable, change: string, params: unknown[]): Promise<Role[]> {
  const rows = await many<RoleRow>(db, `UPDATE roles SET ${change} RETURNING ${COLUMNS}`, params);
  return rows.map(toRole).sort((a, b) => a.position - b.position);
}

/** How many roles the server has, @everyone included. */
export async function countRoles(db: Queryable, serverId: string): Promise<number> {
  return (await one<{ n: number }>(db, 'SELECT count(*)::int AS n FROM roles WHERE server_id = $1', [serverId])).n;
}

/**
 * Roles of a server being created, at the positions given, in one statement: nothing moves, so
 * none of the shifting of insertRoleAtBottom (which touches every role once per role inserted).
 */
export async function insertRolesAt(db: Queryable, serverId: string, roles: (NewRole & { position: number })[]): Promise<Role[]> {
  const rows = await many<RoleRow>(
    db,
    `INSERT INTO roles (id, server_id, name, color, permissions, position, hoist, mentionable)
     SELECT r.id, $1, r.name, r.color, r.permissions, r.position, r.hoist, r.mentionable
     FROM unnest($2::uuid[], $3::text[], $4::int[], $5::bigint[], $6::int[], $7::boolean[], $8::boolean[])
       AS r(id, name, color, permissions, position, hoist, mentionable)
     RETURNING ${COLUMNS}`,
    [
      serverId,
      roles.map((r) => r.id),
      roles.map((r) => r.name),
      roles.map((r) => r.color),
      roles.map((r) => r.permissions.toString()),
      roles.map((r) => r.position),
      roles.map((r) => r.hoist),
      roles.map((r) => r.mentionable),
    ],
  );
  return rows.map(toRole).sort((a, b) => a.position - b.position);
}

/** Every role's id and name, a page in id order (rpc.guilds.roles.page). */
export function listRoleNames(db: Queryable, after: string | undefined, limit: number): Promise<{ id: string; name: string }[]> {
  return many(db, 'SELECT id, name FROM roles WHERE $1::uuid IS NULL OR id > $1 ORDER BY id LIMIT $2', [after ?? null, limit]);
}

export async function listRoles(db: Queryable, serverId: string): Promise<Role[]> {
  return (await many<RoleRow>(db, `SELECT ${COLUMNS} FROM roles WHERE server_id = $1 ORDER BY position, id`, [serverId])).map(toRole);
}

/** The role if it belongs to `serverId`, locked for the rest of the transaction. */
export async function lockServerRole(db: Queryable, serverId: string, id: string): Promise<Role | undefined> {
  const row = await maybeOne<RoleRow>(db, `SELECT ${COLUMNS} FROM roles WHERE id = $1 AND server_id = $2 FOR UPDATE`, [id, serverId]);
  return row && toRole(row);
}

export async function findServerRole(db: Queryable, serverId: string, id: string): Promise<Role | undefined> {
  const row = await maybeOne<RoleRow>(db, `SELECT ${COLUMNS} FROM roles WHERE id = $1 AND server_id = $2`, [id, serverId]);
  return row && toRole(row);
}

export type RolePatch = { name?: string; color?: number; permissions?: string; hoist?: boolean; mentionable?: boolean };

const PATCH_COLUMNS: { [K in keyof RolePatch]: string } = {
  name: 'name',
  color: 'color',
  permissions: 'permissions',
  hoist: 'hoist',
  mentionable: 'mentionable',
};

export async function updateRole(db: Queryable, id: string, patch: RolePatch): Promise<Role> {
  const set = setClause(patch, PATCH_COLUMNS, 1);
  const row = set
    ? await one<RoleRow>(db, `UPDATE roles SET ${set.sql} WHERE id = $1 RETURNING ${COLUMNS}`, [id, ...set.params], 'Role')
    : await one<RoleRow>(db, `SELECT ${COLUMNS} FROM roles WHERE id = $1`, [id], 'Role');
  return toRole(row);
}

/**
 * Moves a role to `to`, shifting the roles in between by one, so positions stay 1..n without gaps
 * or duplicates; answers the roles shifted (not the one moved). The caller holds the server's role
 * rows (lockRoles) for the transaction.
 */
export async function moveRole(db: Queryable, serverId: string, id: string, from: number, to: number): Promise<Role[]> {
  if (from === to) return [];
  const [shift, low, high] = from < to ? [-1, from + 1, to] : [1, to, from - 1];
  const shifted = await shiftRoles(db, 'position = position + $2 WHERE server_id = $1 AND position BETWEEN $3 AND $4 AND id <> $5', [
    serverId,
    shift,
    low,
    high,
    id,
  ]);
  await exec(db, 'UPDATE roles SET position = $2 WHERE id = $1', [id, to]);
  return shifted;
}

export async function highestRolePosition(db: Queryable, serverId: string): Promise<number> {
  const row = await maybeOne<{ top: number }>(db, 'SELECT COALESCE(max(position), 0) AS top FROM roles WHERE server_id = $1', [serverId]);
  return row?.top ?? 0;
}

/** What a role's deletion took with it, each to be announced. */
export interface DeletedRole {
  /** The roles that moved down, as they are now. */
  shifted: Role[];
  /** The role's channel overrides. */
  overrides: { id: string; channelId: string }[];
  /** Whether it was one of the server's DJ roles (djRoleIds changed). */
  wasDjRole: boolean;
}

/**
 * Deletes the role and closes the gap it leaves in the positions. Its overrides are deleted first,
 * here rather than by the foreign key's cascade, which would take them without a word. The caller
 * holds the role's row, so no override of it can be created meanwhile (its insert waits on the key).
 */
export async function deleteRole(db: Queryable, serverId: string, id: string, position: number): Promise<DeletedRole> {
  const overrides = await many<{ id: string; channelId: string }>(
    db,
    'DELETE FROM channel_overrides WHERE role_id = $1 RETURNING id, channel_id AS "channelId"',
    [id],
  );
  await exec(db, 'DELETE FROM roles WHERE id = $1', [id]);
  const djRoles = await exec(db, 'UPDATE servers SET dj_role_ids = array_remove(dj_role_ids, $2) WHERE id = $1 AND $2 = ANY(dj_role_ids)', [
    serverId,
    id,
  ]);
  const shifted = await shiftRoles(db, 'position = position - 1 WHERE server_id = $1 AND position > $2', [serverId, position]);
  return { shifted, overrides, wasDjRole: djRoles > 0 };
}

/** Serialises role changes of one server (positions move together). */
export async function lockRoles(db: Queryable, serverId: string): Promise<void> {
  await exec(db, 'SELECT 1 FROM roles WHERE server_id = $1 FOR UPDATE', [serverId]);
}
