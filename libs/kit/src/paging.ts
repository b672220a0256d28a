import { badRequest } from './errors.ts';

/** One page of a list walked by its key: what the shared list query (`ListPageQuery`) carries. */
export interface KeyPage {
  limit: number;
  /** Keys strictly greater than this one. */
  after?: string | undefined;
  /** Keys strictly smaller than this one (the `limit` closest to it). */
  before?: string | undefined;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The SQL of keyset paging on one unique column, ascending: a condition to AND into the WHERE,
 * the ORDER BY and LIMIT, their parameters (numbered from `firstParam`), and `finish`, which puts
 * a `before` page (read descending, to take the rows closest to the cursor) back in ascending
 * order. With both cursors, the rows between them. `uuid` keys refuse a cursor that is not one
 * with a 400 naming the parameter.
 */
export function keysetPage(column: string, page: KeyPage, firstParam: number, keyType: 'uuid' | 'text' = 'uuid') {
  const params: unknown[] = [];
  const conditions: string[] = [];
  const cast = keyType === 'uuid' ? '::uuid' : '';
  for (const [name, op] of [
    ['after', '>'],
    ['before', '<'],
  ] as const) {
    const value = page[name];
    if (value === undefined) continue;
    if (keyType === 'uuid' && !UUID.test(value)) throw badRequest(`${name} must be a UUID`);
    params.push(value);
    conditions.push(`${column} ${op} $${firstParam + params.length - 1}${cast}`);
  }
  const backwards = page.before !== undefined && page.after === undefined;
  params.push(page.limit);
  return {
    where: conditions.length ? conditions.join(' AND ') : 'true',
    orderLimit: `ORDER BY ${column} ${backwards ? 'DESC' : 'ASC'} LIMIT $${firstParam + params.length - 1}`,
    params,
    finish<T>(rows: T[]): T[] {
      return backwards ? rows.reverse() : rows;
    },
  };
}

/**
 * Reads a list a page at a time in key order, each page handed to `take` before the next is asked
 * for, until a page comes back short or `signal` aborts. Answers how many rows there were.
 */
export async function walkPages<Row, Key>(options: {
  limit: number;
  signal?: AbortSignal;
  read: (after: Key | undefined, limit: number) => Promise<Row[]>;
  keyOf: (row: Row) => Key;
  take: (rows: Row[]) => Promise<void>;
}): Promise<number> {
  let after: Key | undefined;
  let total = 0;
  for (;;) {
    options.signal?.throwIfAborted();
    const rows = await options.read(after, options.limit);
    if (rows.length > 0) await options.take(rows);
    total += rows.length;
    const last = rows.at(-1);
    if (rows.length < options.limit || last === undefined) return total;
    after = options.keyOf(last);
  }
}
