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
