import type { Category } from '@chat/contracts';
import { Permission } from '@chat/contracts';
import { badRequest, notFound, type Queryable, withRetryingTx } from '@chat/kit';
import { v7 as uuidv7 } from 'uuid';
import {
  deleteCategory as deleteCategoryRow,
  findCategory,
  insertCategory,
  listCategories as listCategoryRows,
  renameCategory as renameCategoryRow,
  setCategoryOrder,
} from '../db/categories.ts';
import { compactCategories } from '../db/layout.ts';
import { memberAccess, requirePermission } from './access.ts';
import { isPermutationOf } from './channels.ts';
import { type Ctx, type Domain, emit } from './context.ts';
import { lockLayout, releaseCategoryChannels, requireRoomForChannel } from './layout.ts';

export async function listCategories(d: Domain, ctx: Ctx, serverId: string): Promise<Category[]> {
  await memberAccess(d.pool, serverId, ctx.userId);
  return listCategoryRows(d.pool, serverId);
}

/** A change of the server's category layout: MANAGE_CHANNELS, then the layout lock. */
async function lockServerLayout(tx: Queryable, ctx: Ctx, serverId: string): Promise<void> {
  const access = await memberAccess(tx, serverId, ctx.userId);
  requirePermission(access.permissions, Permission.MANAGE_CHANNELS, 'MANAGE_CHANNELS');
  await lockLayout(tx, serverId);
}

export function createCategory(d: Domain, ctx: Ctx, serverId: string, name: string): Promise<Category> {
  return withRetryingTx(d.pool, async (tx) => {
    await lockServerLayout(tx, ctx, serverId);
    await requireRoomForChannel(tx, serverId);
    const category = await insertCategory(tx, { id: uuidv7(), serverId, name });
    await emit(tx, ctx, 'guilds.category.created', category);
    return category;
  });
}

export function renameCategory(d: Domain, ctx: Ctx, serverId: string, categoryId: string, name: string): Promise<Category> {
  return withRetryingTx(d.pool, async (tx) => {
    const access = await memberAccess(tx, serverId, ctx.userId);
    requirePermission(access.permissions, Permission.MANAGE_CHANNELS, 'MANAGE_CHANNELS');
    const category = await renameCategoryRow(tx, serverId, categoryId, name);
    if (!category) throw notFound('Category');
    await emit(tx, ctx, 'guilds.category.updated', category);
    return category;
  });
}

/** Its channels stay, uncategorised, after the uncategorised ones; the other categories close the gap. */
export async function deleteCategory(d: Domain, ctx: Ctx, serverId: string, categoryId: string): Promise<void> {
  await withRetryingTx(d.pool, async (tx) => {
    await lockServerLayout(tx, ctx, serverId);
    if (!(await findCategory(tx, serverId, categoryId))) throw notFound('Category');
    await releaseCategoryChannels(tx, ctx.requestId, serverId, categoryId);
    await deleteCategoryRow(tx, serverId, categoryId);
    await emit(tx, ctx, 'guilds.category.deleted', { id: categoryId, serverId });
    if (await compactCategories(tx, serverId)) await emitCategories(tx, ctx, serverId);
  });
}

async function emitCategories(tx: Queryable, ctx: Ctx, serverId: string): Promise<Category[]> {
  const categories = await listCategoryRows(tx, serverId);
  for (const category of categories) await emit(tx, ctx, 'guilds.category.updated', category);
  return categories;
}

/** Takes exactly the server's set of category ids in the new order; any other set changes nothing. */
export function reorderCategories(d: Domain, ctx: Ctx, serverId: string, categoryIds: string[]): Promise<Category[]> {
  return withRetryingTx(d.pool, async (tx) => {
    await lockServerLayout(tx, ctx, serverId);
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
    return emitCategories(tx, ctx, serverId);
  });
}
