import type { Category } from '@chat/contracts';
import { exec, many, maybeOne, type Queryable } from '@chat/kit';

type CategoryRow = { id: string; server_id: string; name: string; position: number; created_at: string };

const COLUMNS = 'id, server_id, name, position, created_at';

const toCategory = (r: CategoryRow): Category => ({
  id: r.id,
  serverId: r.server_id,
  name: r.name,
  position: r.position,
  createdAt: r.created_at,
});

export async function insertCategory(db: Queryable, c: { id: string; serverId: string; name: string }): Promise<Category> {
  const row = await maybeOne<CategoryRow>(
    db,
    `INSERT INTO categories (id, server_id, name, position)
     VALUES ($1, $2, $3, (SELECT COALESCE(max(position) + 1, 0) FROM categories WHERE server_id = $2))
     RETURNING ${COLUMNS}`,
    [c.id, c.serverId, c.name],
  );
  return toCategory(row!);
}

/** The categories of a server being created, positions 0..n-1 in the order given, in one statement. */
export async function insertCategoriesInOrder(
  db: Queryable,
  serverId: string,
  categories: { id: string; name: string }[],
): Promise<Category[]> {
  const rows = await many<CategoryRow>(
    db,
    `INSERT INTO categories (id, server_id, name, position)
     SELECT k.id, $1, k.name, k.ord - 1 FROM unnest($2::uuid[], $3::text[]) WITH ORDINALITY AS k(id, name, ord)
     RETURNING ${COLUMNS}`,
    [serverId, categories.map((c) => c.id), categories.map((c) => c.name)],
  );
  return rows.map(toCategory).sort((a, b) => a.position - b.position);
}

export async function listCategories(db: Queryable, serverId: string, lock = false): Promise<Category[]> {
  const rows = await many<CategoryRow>(
    db,
    `SELECT ${COLUMNS} FROM categories WHERE server_id = $1 ORDER BY position, id${lock ? ' FOR UPDATE' : ''}`,
    [serverId],
  );
  return rows.map(toCategory);
}

export async function findCategory(db: Queryable, serverId: string, id: string): Promise<Category | undefined> {
  const row = await maybeOne<CategoryRow>(db, `SELECT ${COLUMNS} FROM categories WHERE id = $1 AND server_id = $2`, [id, serverId]);
  return row && toCategory(row);
}

/**
 * Whether the category is this server's, locked against deletion until the transaction ends: a
 * channel about to be put in it then never points at a category deleted meanwhile (a foreign-key
 * failure); a delete already under way is waited for, and the category is then not found.
 */
export async function holdCategory(db: Queryable, serverId: string, id: string): Promise<boolean> {
  return Boolean(await maybeOne(db, 'SELECT 1 FROM categories WHERE id = $1 AND server_id = $2 FOR KEY SHARE', [id, serverId]));
}

export async function renameCategory(db: Queryable, serverId: string, id: string, name: string): Promise<Category | undefined> {
  const row = await maybeOne<CategoryRow>(db, `UPDATE categories SET name = $3 WHERE id = $1 AND server_id = $2 RETURNING ${COLUMNS}`, [
    id,
    serverId,
    name,
  ]);
  return row && toCategory(row);
}

export function deleteCategory(db: Queryable, serverId: string, id: string): Promise<number> {
  return exec(db, 'DELETE FROM categories WHERE id = $1 AND server_id = $2', [id, serverId]);
}

/** Positions 0..n-1 in the order given. */
export function setCategoryOrder(db: Queryable, serverId: string, orderedIds: string[]): Promise<number> {
  return exec(
    db,
    `UPDATE categories c SET position = o.ord - 1
     FROM unnest($2::uuid[]) WITH ORDINALITY AS o(id, ord)
     WHERE c.id = o.id AND c.server_id = $1`,
    [serverId, orderedIds],
  );
}
