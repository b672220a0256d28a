import { exec, many, type Queryable } from '@chat/kit';

/** Guilds' role names, as far as its events told them (migration 0014). */

/** A role's name as of `at`; an older event changes nothing. */
export async function saveRoleName(tx: Queryable, role: { id: string; name: string }, at: string): Promise<void> {
  await exec(
    tx,
    `INSERT INTO role_names (id, name, version) VALUES ($1, $2, $3)
     ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, version = EXCLUDED.version WHERE role_names.version <= EXCLUDED.version`,
    [role.id, role.name, at],
  );
}

/**
 * Names as guilds holds them now (its pages, when the stream no longer has the events): versioned
 * before any event, so every event published after the backfill began, applied next, wins.
 */
export async function saveOwnersRoleNames(tx: Queryable, roles: { id: string; name: string }[]): Promise<void> {
  await exec(
    tx,
    `INSERT INTO role_names (id, name, version) SELECT id, name, '-infinity' FROM unnest($1::uuid[], $2::text[]) AS r(id, name)
     ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, version = EXCLUDED.version`,
    [roles.map((r) => r.id), roles.map((r) => r.name)],
  );
}

export async function forgetRoleName(tx: Queryable, id: string): Promise<void> {
  await exec(tx, 'DELETE FROM role_names WHERE id = $1', [id]);
}

/** The names of these roles, by id (a role never heard of is left out). */
export async function roleNames(db: Queryable, ids: string[]): Promise<Record<string, string>> {
  if (ids.length === 0) return {};
  const rows = await many<{ id: string; name: string }>(db, 'SELECT id::text, name FROM role_names WHERE id = ANY($1::uuid[])', [ids]);
  return Object.fromEntries(rows.map((r) => [r.id, r.name]));
}
