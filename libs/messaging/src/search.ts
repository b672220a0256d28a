import { badRequest, many, one, type Queryable } from '@chat/kit';
import type { MessageSource, PageFilter } from './paging.ts';

/** One search: where it may read, what it looks for, which page. */
export type SearchRequest = {
  /** The channels or conversations the caller may read now; nothing outside them is counted or answered. */
  scopeIds: readonly string[];
  /** Web search syntax (`"a phrase"`, `-excluded`, `or`), as the contract let it through. */
  text: string;
  /** Newest first; `before` and `after` are message ids (both: the messages between them). */
  page: { limit: number; before?: string | undefined; after?: string | undefined };
  /** The service's own condition on `m` (author, attachments, blocks), over placeholders from `$6` on. */
  filter?: PageFilter;
};

export type SearchResult<Message> = { total: number; messages: Message[] };

/**
 * The text as a tsquery, built as the generated `search` column is (the `simple` configuration
 * over the text without accents; see the services' `*_message_search.sql` migrations).
 */
const TSQUERY = `websearch_to_tsquery('simple', message_search_text($2))`;
/**
 * A query with no word to look up: empty (only punctuation) or only negations (`-word`), which no
 * index can answer and which would read every message. Immutable, so it is folded when planned.
 */
const SEARCHABLE = `querytree(${TSQUERY}) NOT IN ('', 'T')`;

/**
 * The statement that counts the hits and picks a page of their ids (exported so that the bench can
 * EXPLAIN exactly what the services run). The scope and the filter are inside it, so a page is
 * never short because of hits the caller may not read, and `total` never counts them. The hits are
 * materialised from the GIN index first: otherwise the planner may walk the id index backwards
 * testing each message, which reads the whole history for a rare word.
 */
export function searchStatement(
  source: Pick<MessageSource<Record<string, unknown>, unknown>, 'table' | 'scope'>,
  request: SearchRequest,
): { sql: string; params: unknown[] } {
  const { page, filter } = request;
  // `after` alone takes the hits right after it (as message paging does); else the newest below `before`.
  const order = page.after && !page.before ? 'ASC' : 'DESC';
  return {
    sql: `WITH hits AS MATERIALIZED (
       SELECT m.id FROM ${source.table} m
       WHERE ${SEARCHABLE} AND ${source.scope} = ANY($1::uuid[]) AND m.search @@ ${TSQUERY}${filter ? ` AND ${filter.where}` : ''}),
     page AS (
       SELECT id FROM hits WHERE ($3::uuid IS NULL OR id < $3) AND ($4::uuid IS NULL OR id > $4) ORDER BY id ${order} LIMIT $5)
     SELECT ${SEARCHABLE} AS searchable, (SELECT count(*) FROM hits)::int AS total, ARRAY(SELECT id FROM page ORDER BY id DESC) AS ids`,
    params: [request.scopeIds, request.text, page.before ?? null, page.after ?? null, page.limit, ...(filter?.params ?? [])],
  };
}

/** A page of the messages of `scopeIds` that match the text, newest first, and how many match in all. */
export async function searchMessages<Row extends Record<string, unknown>, Message>(
  db: Queryable,
  source: MessageSource<Row, Message>,
  request: SearchRequest,
): Promise<SearchResult<Message>> {
  const statement = searchStatement(source, request);
  const found = await one<{ searchable: boolean; total: number; ids: string[] }>(db, statement.sql, statement.params);
  if (!found.searchable) throw badRequest('query.q: name at least one word to find (punctuation or excluded words alone find nothing)');
  const rows = found.ids.length ? await many<Row>(db, `${source.select} WHERE m.id = ANY($1::uuid[]) ORDER BY m.id DESC`, [found.ids]) : [];
  return { total: found.total, messages: rows.map((row) => source.toMessage(row)) };
}
