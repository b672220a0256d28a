import { type Pool, pipelinedTx, prepared, type Sql, type Statement } from '@chat/kit';

/**
 * Where one kind of message is read from. `select` is `SELECT <columns> FROM <table> m [JOIN ...]`
 * with the message table aliased `m`; `table` is that table alone; `scope` is the column that
 * holds the channel or conversation (`m.channel_id`). All are constants of the service, never input.
 */
export interface MessageSource<Row extends Record<string, unknown>, Message> {
  select: string;
  table: string;
  scope: string;
  toMessage(row: Row): Message;
}

/** A condition the service adds (who may see what), over placeholders from `$4` on, with their values. */
export type PageFilter = { where: string; params: unknown[] };

/** A cursor page: newest first, before or after a message, or around one (it included). */
export type Page = { limit: number; before?: string | undefined; after?: string | undefined; around?: string | undefined };

/**
 * How a page is read: `readLock` takes the scope's read lock (`$1` the scope id), which waits for
 * the posts in flight (see nextMessageId); `filter` is the service's own condition, if any.
 */
export type PageReading = { readLock: Sql; filter?: PageFilter | undefined };

/**
 * A page of one channel or conversation, newest first. Ids are UUID v7 issued in commit order per
 * scope (see nextMessageId), so `before`/`after` an id neither skip nor repeat a message while
 * others arrive, as long as the page is read under the scope's read lock, taken before its
 * snapshot. The lock and the reads go to PostgreSQL in one pipelined transaction, so the lock,
 * which keeps posts and other readers of the scope waiting, is held only while they run.
 * `after` takes the messages right after the cursor, then answers them newest first.
 */
export async function pageOfMessages<Row extends Record<string, unknown>, Message>(
  pool: Pool,
  source: MessageSource<Row, Message>,
  scopeId: string,
  page: Page,
  reading: PageReading,
): Promise<Message[]> {
  const read = (cursor: string | null, limit: number, which: Side) =>
    side(source, { scopeId, cursor, limit, which, filter: reading.filter });
  const lock = { sql: reading.readLock, params: [scopeId] };
  const rowsOf = async (...reads: Statement[]) => (await pipelinedTx(pool, [lock, ...reads])).slice(1) as Row[][];
  if (page.around) {
    // Both sides in the one transaction: the older side reads up to the whole limit and is cut to what the newer leaves.
    const half = Math.floor(page.limit / 2);
    const [newer = [], older = []] = await rowsOf(read(page.around, half, 'after'), read(page.around, page.limit, 'through'));
    return [...newer.reverse(), ...older.slice(0, page.limit - newer.length)].map((r) => source.toMessage(r));
  }
  if (page.after) {
    const [newer = []] = await rowsOf(read(page.after, page.limit, 'after'));
    return newer.reverse().map((r) => source.toMessage(r));
  }
  const [older = []] = await rowsOf(read(page.before ?? null, page.limit, 'before'));
  return older.map((r) => source.toMessage(r));
}

type Side = 'before' | 'through' | 'after';

/**
 * One side of a cursor: `before` (newest first), `through` (the cursor and older, newest first) or
 * `after` (oldest first, the ones right after the cursor).
 */
function side<Row extends Record<string, unknown>, Message>(
  source: MessageSource<Row, Message>,
  q: { scopeId: string; cursor: string | null; limit: number; which: Side; filter: PageFilter | undefined },
): Statement {
  // The newest page has no cursor: its own statement, so that each statement has one plan for all values.
  const where = q.cursor === null ? '$2::uuid IS NULL' : { before: 'm.id < $2', through: 'm.id <= $2', after: 'm.id > $2' }[q.which];
  const extra = q.filter ? ` AND ${q.filter.where}` : '';
  const order = q.which === 'after' ? 'ASC' : 'DESC';
  const sql = prepared(`${source.select} WHERE ${source.scope} = $1 AND ${where}${extra} ORDER BY m.id ${order} LIMIT $3`);
  return { sql, params: [q.scopeId, q.cursor, q.limit, ...(q.filter?.params ?? [])] };
}
