import type { Queryable } from '@chat/kit';

/**
 * `SET col = $n, ...` for the fields of a partial update that are present, from a fixed map of
 * field -> column (so no client-chosen name ever reaches SQL). Parameters start after `offset`.
 */
export function setClause<T extends object>(
  patch: T,
  columns: { [K in keyof T]?: string },
  offset: number,
): { sql: string; params: unknown[] } | undefined {
  const parts: string[] = [];
  const params: unknown[] = [];
  for (const [field, column] of Object.entries(columns) as [keyof T, string][]) {
    const value = patch[field];
    if (value === undefined) continue;
    params.push(value);
    parts.push(`${column} = $${offset + params.length}`);
  }
  return parts.length ? { sql: parts.join(', '), params } : undefined;
}

/** A LIKE pattern that matches `text` literally anywhere. */
export function containsPattern(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/** pg answers int8[] as strings; masks are bigint inside the domain. */
export const toBigInts = (values: readonly (string | number)[]): bigint[] => values.map((v) => BigInt(v));

/**
 * guilds' advisory lock spaces, in one place so that none is taken twice (the kit's relay and
 * Idempotency-Keys use 727_00x spaces of their own).
 */
const LOCK_SPACES = { voice: 727_007, layout: 727_011, overrides: 727_012, memberships: 727_013, webhooks: 727_014 } as const;

/** Holds the lock of `key` in one of guilds' spaces until the transaction ends, across replicas. */
export async function holdLock(db: Queryable, space: keyof typeof LOCK_SPACES, key: string): Promise<void> {
  await db.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [LOCK_SPACES[space], key]);
}
