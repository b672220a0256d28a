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
