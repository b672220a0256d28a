import type { Category } from '@chat/contracts';
import { Permission } from '@chat/contracts';
import { badRequest, notFound, withTx } from '@chat/kit';
import { v7 as uuidv7 } from 'uuid';
import {
  deleteCategory as deleteCategoryRow,
  insertCategory,
  listCategories as listCategoryRows,
  renameCategory as renameCategoryRow,
  setCategoryOrder,
} from '../db/categories.ts';
import { memberAccess, requirePermission } from './access.ts';
import { type Ctx, type Domain, emit } from './context.ts';

export async function listCategories(d: Domain, ctx: Ctx, serverId: string): Promise<Category[]> {
  await memberAccess(d.pool, serverId, ctx.userId);
  return listCategoryRows(d.pool, serverId);
}

export function createCategory(d: Domain, ctx: Ctx, serverId: string, name: string): Promise<Category> {
  return withTx(d.pool, async (tx) => {
    const access = await memberAccess(tx, serverId, ctx.userId);
    requirePermission(access.permissions, Permission.MANAGE_CHANNELS, 'MANAGE_CHANNELS');
    const category = await insertCategory(tx, { id: uuidv7(), serverId, name });
    await emit(tx, ctx, 'guilds.category.created', category);
    return category;
  });
}

export function renameCategory(d: Domain, ctx: Ctx, serverId: string, categoryId: string, name: string): Promise<Category> {
  return withTx(d.pool, async (tx) => {
    const access = await memberAccess(tx, serverId, ctx.userId);
    requirePermission(access.permissions, Permission.MANAGE_CHANNELS, 'MANAGE_CHANNELS');
    const category = await renameCategoryRow(tx, serverId, categoryId, name);
    if (!category) throw notFound('Category');
    await emit(tx, ctx, 'guilds.category.updated', category);
    return category;
  });
}

/** Its channels stay, uncategorised (the foreign key sets their category to null). */
export async function deleteCategory(d: Domain, ctx: Ctx, serverId: string, categoryId: string): Promise<void> {
  await withTx(d.pool, async (tx) => {
    const access = await memberAccess(tx, serverId, ctx.userId);
    requirePermission(access.permissions, Permission.MANAGE_CHANNELS, 'MANAGE_CHANNELS');
    if (!(await deleteCategoryRow(tx, serverId, categoryId))) throw notFound('Category');
    await emit(tx, ctx, 'guilds.category.deleted', { id: categoryId, serverId });
  });
}

/** Takes exactly the server's set of category ids in the new order; any other set changes nothing. */
export function reorderCategories(d: Domain, ctx: Ctx, serverId: string, categoryIds: string[]): Promise<Category[]> {
  return withTx(d.pool, async (tx) => {
    const access = await memberAccess(tx, serverId, ctx.userId);
    requirePermission(access.permissions, Permission.MANAGE_CHANNELS, 'MANAGE_CHANNELS');
    const current = await listCategoryRows(tx, serverId, true);
    if (
      !isPermutationOf(
        categoryIds,
        current.map((c) => c.id),
      )
    ) {
      throw badRequest("categoryIds must list each of this server's categories exactly once");
    }
    await setCategoryOrder(tx, serverId, categoryIds);
    const reordered = await listCategoryRows(tx, serverId);
    for (const category of reordered) await emit(tx, ctx, 'guilds.category.updated', category);
    return reordered;
  });
}

function isPermutationOf(given: string[], actual: string[]): boolean {
  const wanted = new Set(actual);
  return given.length === actual.length && new Set(given).size === given.length && given.every((id) => wanted.has(id));
}
