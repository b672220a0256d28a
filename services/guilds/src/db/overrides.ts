import type { PermissionOverride } from '@chat/contracts';
import { exec, many, maybeOne, one, type Queryable } from '@chat/kit';
import { holdLock } from './sql.ts';

type OverrideRow = {
  id: string;
  channel_id: string;
  role_id: string | null;
  user_id: string | null;
  allow_bits: number;
  deny_bits: number;
  created_at: string;
};

const COLUMNS = 'id, channel_id, role_id, user_id, allow_bits, deny_bits, created_at';

const toOverride = (r: OverrideRow): PermissionOverride => ({
  id: r.id,
  channelId: r.channel_id,
  roleId: r.role_id,
  userId: r.user_id,
  allowBits: r.allow_bits,
  denyBits: r.deny_bits,
  createdAt: r.created_at,
});

/** Serialises the creation of a channel's overrides (their number is bounded), across replicas. */
export async function lockChannelOverrides(db: Queryable, channelId: string): Promise<void> {
  await holdLock(db, 'overrides', channelId);
}

/** How many overrides the channel has, of roles and members together. */
export async function countOverrides(db: Queryable, channelId: string): Promise<number> {
  return (await one<{ n: number }>(db, 'SELECT count(*)::int AS n FROM channel_overrides WHERE channel_id = $1', [channelId])).n;
}

export async function listOverrides(db: Queryable, channelId: string): Promise<PermissionOverride[]> {
  const rows = await many<OverrideRow>(db, `SELECT ${COLUMNS} FROM channel_overrides WHERE channel_id = $1 ORDER BY created_at, id`, [
    channelId,
  ]);
  return rows.map(toOverride);
}

/** The overrides of these channels that concern a member: their roles (@everyone included) or themself. */
export async function overridesConcerning(
  db: Queryable,
  channelIds: string[],
  roleIds: string[],
  userId: string,
): Promise<PermissionOverride[]> {
  const rows = await many<OverrideRow>(
    db,
    `SELECT ${COLUMNS} FROM channel_overrides WHERE channel_id = ANY($1::uuid[]) AND (role_id = ANY($2::uuid[]) OR user_id = $3)`,
    [channelIds, roleIds, userId],
  );
  return rows.map(toOverride);
}

/** Every override of every channel of the server: what the server's channel list keeps (domain/channel-list.ts). */
export async function overridesOfServer(db: Queryable, serverId: string): Promise<PermissionOverride[]> {
  const rows = await many<OverrideRow>(
    db,
    `SELECT ${COLUMNS} FROM channel_overrides WHERE channel_id IN (SELECT id FROM channels WHERE server_id = $1)`,
    [serverId],
  );
  return rows.map(toOverride);
}

/** The override of that role or user in the channel, locked for the rest of the transaction; none locks nothing. */
export async function findOverride(
  db: Queryable,
  channelId: string,
  target: { roleId?: string; userId?: string },
): Promise<PermissionOverride | undefined> {
  const row = await maybeOne<OverrideRow>(
    db,
    `SELECT ${COLUMNS} FROM channel_overrides WHERE channel_id = $1 AND (role_id = $2 OR user_id = $3) FOR UPDATE`,
    [channelId, target.roleId ?? null, target.userId ?? null],
  );
  return row && toOverride(row);
}

export async function findOverrideById(db: Queryable, channelId: string, id: string): Promise<PermissionOverride | undefined> {
  const row = await maybeOne<OverrideRow>(db, `SELECT ${COLUMNS} FROM channel_overrides WHERE id = $1 AND channel_id = $2 FOR UPDATE`, [
    id,
    channelId,
  ]);
  return row && toOverride(row);
}

type NewOverride = { id: string; channelId: string; roleId: string | null; userId: string | null; allow: bigint; deny: bigint };

/** Creates the override of that role or user, or replaces its bits (one per target and channel). */
export async function upsertOverride(db: Queryable, o: NewOverride): Promise<PermissionOverride> {
  const row = await one<OverrideRow>(
    db,
    `INSERT INTO channel_overrides (id, channel_id, role_id, user_id, allow_bits, deny_bits) VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT ${targetOf(o)} DO UPDATE SET allow_bits = EXCLUDED.allow_bits, deny_bits = EXCLUDED.deny_bits
     RETURNING ${COLUMNS}`,
    overrideParams(o),
  );
  return toOverride(row);
}

/**
 * Role overrides of channels being created, in one statement. The caller gives each (channel,
 * role) once: a repeat would be a unique violation, not a replacement. Answers them in the order given.
 */
export function insertRoleOverrides(
  db: Queryable,
  overrides: { id: string; channelId: string; roleId: string; allow: bigint; deny: bigint }[],
): Promise<PermissionOverride[]> {
  return insertOverrides(
    db,
    overrides.map((o) => ({ ...o, userId: null })),
  );
}

/**
 * Overrides of roles or members of channels being created, in one statement (each target once per
 * channel, as insertRoleOverrides). Answers them in the order given.
 */
export async function insertOverrides(db: Queryable, overrides: NewOverride[]): Promise<PermissionOverride[]> {
  if (overrides.length === 0) return [];
  const rows = await many<OverrideRow>(
    db,
    `INSERT INTO channel_overrides (id, channel_id, role_id, user_id, allow_bits, deny_bits)
     SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::uuid[], $5::bigint[], $6::bigint[])
     RETURNING ${COLUMNS}`,
    [
      overrides.map((o) => o.id),
      overrides.map((o) => o.channelId),
      overrides.map((o) => o.roleId),
      overrides.map((o) => o.userId),
      overrides.map((o) => o.allow.toString()),
      overrides.map((o) => o.deny.toString()),
    ],
  );
  const byId = new Map(rows.map((r) => [r.id, toOverride(r)]));
  return overrides.map((o) => byId.get(o.id) as PermissionOverride);
}

/**
 * Creates the override of that role or user unless it has one: undefined when another transaction
 * created it first (this one waits for it to commit), so a check made against "none" never overwrites it.
 */
export async function insertOverrideIfAbsent(db: Queryable, o: NewOverride): Promise<PermissionOverride | undefined> {
  const row = await maybeOne<OverrideRow>(
    db,
    `INSERT INTO channel_overrides (id, channel_id, role_id, user_id, allow_bits, deny_bits) VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT ${targetOf(o)} DO NOTHING
     RETURNING ${COLUMNS}`,
    overrideParams(o),
  );
  return row && toOverride(row);
}

export async function setOverrideBits(db: Queryable, id: string, allow: bigint, deny: bigint): Promise<PermissionOverride> {
  const row = await one<OverrideRow>(
    db,
    `UPDATE channel_overrides SET allow_bits = $2, deny_bits = $3 WHERE id = $1 RETURNING ${COLUMNS}`,
    [id, allow.toString(), deny.toString()],
    'Permission override',
  );
  return toOverride(row);
}

const targetOf = (o: NewOverride) =>
  o.roleId ? '(channel_id, role_id) WHERE role_id IS NOT NULL' : '(channel_id, user_id) WHERE user_id IS NOT NULL';
const overrideParams = (o: NewOverride) => [o.id, o.channelId, o.roleId, o.userId, o.allow.toString(), o.deny.toString()];

export function deleteOverride(db: Queryable, id: string): Promise<number> {
  return exec(db, 'DELETE FROM channel_overrides WHERE id = $1', [id]);
}
