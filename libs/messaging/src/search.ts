import { badRequest, many, type Queryable } from '@chat/kit';
import type { MessageSource, PageFilter } from './paging.ts';

/**
 * Where a search may read. `only`: these channels or conversations. `except`: every message the
 * service's filter admits (which then names the container, a server say) but those of these
 * channels, and only while `current` holds: a condition over the filter's placeholders, checked in
 * the statement's own snapshot, that pins the set of channels the exceptions were drawn from (a
 * version read with them), so that a channel created since is never searched. The service sends
 * the shorter list: a member who may read 900 channels of 1,000 names the 100 others.
 */
export type SearchScope = { only: readonly string[] } | { except: readonly string[]; current: string };
/** What a search in this scope may answer besides its result: only an `except` scope goes stale. */
type StaleIn<Scope extends SearchScope> = Scope extends { except: readonly string[] } ? 'stale' : never;

/** One search: where it may read, what it looks for, which page. */
export type SearchRequest = {
  /** What the caller may read now; nothing outside it is counted or answered. */
  scope: SearchScope;
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
  const { page, filter, scope } = request;
  const [within, current] =
    'only' in scope ? [`${source.scope} = ANY($1::uuid[])`, 'true'] : [`${source.scope} <> ALL($1::uuid[])`, scope.current];
  // `after` alone takes the hits right after it (as message paging does); else the newest below `before`.
  const order = page.after && !page.before ? 'ASC' : 'DESC';
  return {
    sql: `WITH hits AS MATERIALIZED (
       SELECT m.id FROM ${source.table} m
       WHERE ${SEARCHABLE} AND ${within} AND m.search @@ ${TSQUERY}${filter ? ` AND ${filter.where}` : ''}),
     page AS (
       SELECT id FROM hits WHERE ($3::uuid IS NULL OR id < $3) AND ($4::uuid IS NULL OR id > $4) ORDER BY id ${order} LIMIT $5)
     SELECT ${SEARCHABLE} AS searchable, ${current} AS current, (SELECT count(*) FROM hits)::int AS total,
       ARRAY(SELECT id FROM page ORDER BY id DESC) AS ids`,
    params: [
      'only' in scope ? scope.only : scope.except,
      request.text,
      page.before ?? null,
      page.after ?? null,
      page.limit,
      ...(filter?.params ?? []),
    ],
  };
}

/**
 * A page of the messages in scope that match, newest first, and how many match in all: one
 * statement, the page's rows joined to the count (one row with no message when nothing matches).
 * `stale` when an `except` scope is no longer current: the caller draws it again.
 */
export async function searchMessages<Row extends Record<string, unknown>, Message, Scope extends SearchScope>(
  db: Queryable,
  source: MessageSource<Row, Message>,
  request: SearchRequest & { scope: Scope },
): Promise<SearchResult<Message> | StaleIn<Scope>> {
  const statement = searchStatement(source, request);
  const rows = await many<Row & { searchable: boolean; current: boolean; total: number; id: string | null }>(
    db,
    `WITH found AS (${statement.sql})
     SELECT found.searchable, found.current, found.total, page.* FROM found
     LEFT JOIN LATERAL (${source.select} WHERE m.id = ANY(found.ids)) page ON true
     ORDER BY page.id DESC`,
    statement.params,
  );
  const found = rows[0]!;
  if (!found.searchable) throw badRequest('query.q: name at least one word to find (punctuation or excluded words alone find nothing)');
  if (!found.current) return 'stale' as StaleIn<Scope>;
  return { total: found.total, messages: rows.filter((row) => row.id !== null).map((row) => source.toMessage(row)) };
}
