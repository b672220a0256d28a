import { z } from 'zod';

/** Every record id is a UUID (v7 where we generate it). */
export const Id = z.uuid({ error: 'must be a UUID' });
export const Timestamp = z.iso.datetime({ offset: true });
export const ErrorBody = z.object({ error: z.string() }).meta({ id: 'Error' });
export const Empty = z.object({}).meta({ id: 'Empty' });

export const IdParams = z.object({ id: Id });

/** Cursor paging of lists that grow: newest first, `before`/`after` an id. */
export const PageQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(50),
  before: Id.optional(),
  after: Id.optional(),
});

/** A Discord-style permission mask; all bits used stay below 2^53 so JSON numbers carry them. */
export const PermissionMask = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);

/**
 * The one query of every list that pages by its key (DESIGN.md: limit 50 by default, at most 100;
 * a cursor on the list's order key). Each list is in ascending order of the key its contract
 * names; `after` takes the keys greater than a cursor, `before` the `limit` keys just below one
 * (still answered in ascending order), both together the keys between them. The answer keeps
 * its shape: a bare array stays a bare array, and a page shorter than `limit` is the last one.
 */
export const ListPageQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(50),
  after: z
    .string()
    .regex(/^[A-Za-z0-9-]{1,64}$/, 'not a cursor')
    .optional(),
  before: z
    .string()
    .regex(/^[A-Za-z0-9-]{1,64}$/, 'not a cursor')
    .optional(),
});
export type ListPageQuery = z.infer<typeof ListPageQuery>;
