import { many, prepared, type Queryable } from '@chat/kit';

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
 * A page of one channel or conversation, newest first. Ids are UUID v7 issued in commit order per
 * scope (see nextMessageId), so `before`/`after` an id neither skip nor repeat a message while
 * others arrive. `after` takes the messages right after the cursor, then answers them newest first.
 */
export async function pageOfMessages<Row extends Record<string, unknown>, Message>(
  db: Queryable,
  source: MessageSource<Row, Message>,
  scopeId: string,
  page: Page,
  filter?: PageFilter,
): Promise<Message[]> {
  const read = (cursor: string | null, limit: number, which: Side) => side(db, source, { scopeId, cursor, limit, which, filter });
  if (page.after) return (await read(page.after, page.limit, 'after')).reverse();
  if (page.around) {
    const newer = await read(page.around, Math.floor(page.limit / 2), 'after');
    const rest = await read(page.around, page.limit - newer.length, 'through');
    return [...newer.reverse(), ...rest];
  }
  return read(page.before ?? null, page.limit, 'before');
}

type Side = 'before' | 'through' | 'after';

/**
 * One side of a cursor: `before` (newest first), `through` (the cursor and older, newest first) or
 * `after` (oldest first, the ones right after the cursor).
 */
async function side<Row extends Record<string, unknown>, Message>(
  db: Queryable,
  source: MessageSource<Row, Message>,
  q: { scopeId: string; cursor: string | null; limit: number; which: Side; filter: PageFilter | undefined },
): Promise<Message[]> {
  if (q.limit === 0) return [];
  // The newest page has no cursor: its own statement, so that each statement has one plan for all values.
  const where = q.cursor === null ? '$2::uuid IS NULL' : { before: 'm.id < $2', through: 'm.id <= $2', after: 'm.id > $2' }[q.which];
  const extra = q.filter ? ` AND ${q.filter.where}` : '';
  const order = q.which === 'after' ? 'ASC' : 'DESC';
  const sql = prepared(`${source.select} WHERE ${source.scope} = $1 AND ${where}${extra} ORDER BY m.id ${order} LIMIT $3`);
  const rows = await many<Row>(db, sql, [q.scopeId, q.cursor, q.limit, ...(q.filter?.params ?? [])]);
  return rows.map((r) => source.toMessage(r));
}
