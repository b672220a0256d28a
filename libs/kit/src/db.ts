import { AsyncLocalStorage } from 'node:async_hooks';
import { createHash } from 'node:crypto';
import type { Writable } from 'node:stream';
import pg from 'pg';
import { AppError } from './errors.ts';
import { watchPool } from './metrics.ts';

export type Pool = pg.Pool;
/** Anything that runs a query: the pool, or a client inside a transaction. */
export type Queryable = Pick<pg.Pool, 'query'> | pg.PoolClient;

// int8 and numeric come back as strings by default; our bigints (permission masks, counts) stay
// below 2^53, so numbers are the honest JSON type.
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));
// timestamptz as ISO strings in UTC: the wire format of every record. 'infinity' has no Date and
// stays as PostgreSQL wrote it rather than failing the whole query.
pg.types.setTypeParser(pg.types.builtins.TIMESTAMPTZ, (v) => timestamptzToIso(v));

/** What PostgreSQL writes for a timestamptz in a UTC session: date, time, up to 6 fraction digits, +00. */
const UTC_TIMESTAMPTZ = /^([1-9]\d{3}-\d\d-\d\d) (\d\d:\d\d:\d\d)(?:\.(\d{1,6}))?\+00$/;

/**
 * A timestamptz as PostgreSQL writes it, as the ISO string `Date#toISOString` makes of it
 * (milliseconds, the rest cut off). The UTC form every session of ours gets is rewritten as text,
 * which costs a sixth of parsing a Date (a page of messages has a hundred of them); any other form
 * (another session time zone, 'infinity') goes through Date, and one Date cannot read stays as
 * PostgreSQL wrote it rather than failing the whole query.
 */
export function timestamptzToIso(value: string): string {
  const utc = UTC_TIMESTAMPTZ.exec(value);
  if (utc) return `${utc[1]}T${utc[2]}.${(utc[3] ?? '').padEnd(3, '0').slice(0, 3)}Z`;
  const at = new Date(value);
  return Number.isNaN(at.getTime()) ? value : at.toISOString();
}

export function createPool(url: string, max = 10): Pool {
  // Pipelined: a query is written at once, not after the one before it is answered. Code that
  // awaits each query sees no difference; pipelinedTx sends a whole transaction in one write.
  const pool = new pg.Pool({ connectionString: url, max, connectionTimeoutMillis: 3_000, pipeline: true });
  // An idle client that errors (e.g. PostgreSQL restarted) must not crash the process.
  pool.on('error', () => {});
  watchPool(pool);
  return pool;
}

type Row = Record<string, unknown>;

/**
 * A statement for the query helpers: its text, or a named statement, which pg prepares once per
 * connection and then only binds (no parse or plan per call): for the hot paths.
 */
export type Sql = string | { name: string; text: string };

/**
 * A named statement for a hot path, named after its text: PostgreSQL parses and plans it once
 * per connection and then only binds it, which for a short lookup saves most of its cost. Only for
 * statements whose best plan does not depend on the values bound (a lookup by key), since after a
 * few runs PostgreSQL may keep one generic plan for all values.
 */
export function prepared(text: string): { name: string; text: string } {
  let statement = preparedByText.get(text);
  if (!statement) {
    // Texts come from the code, so they are few; the bound only guards against a text built from input.
    if (preparedByText.size >= 1_000) preparedByText.clear();
    statement = { name: `p_${createHash('sha1').update(text).digest('hex').slice(0, 16)}`, text };
    preparedByText.set(text, statement);
  }
  return statement;
}
const preparedByText = new Map<string, { name: string; text: string }>();

/** Exactly one row, or a 404 naming `what`. */
export async function one<T extends Row>(db: Queryable, sql: Sql, params: unknown[] = [], what = 'Resource'): Promise<T> {
  const row = await maybeOne<T>(db, sql, params);
  if (!row) throw new AppError(404, `${what} not found`);
  return row;
}

export async function maybeOne<T extends Row>(db: Queryable, sql: Sql, params: unknown[] = []): Promise<T | undefined> {
  const { rows } = await run(db, sql, params);
  return rows[0] as T | undefined;
}

export async function many<T extends Row>(db: Queryable, sql: Sql, params: unknown[] = []): Promise<T[]> {
  const { rows } = await run(db, sql, params);
  return rows as T[];
}

/**
 * Whether `query` finds any row, asked as one prepared statement: what a clock or a poll asks many
 * times a second before it opens a transaction.
 */
export async function exists(db: Queryable, query: string, params: unknown[] = []): Promise<boolean> {
  const row = await maybeOne<{ found: boolean }>(db, prepared(`SELECT EXISTS (${query}) AS found`), params);
  return row?.found === true;
}

/** Runs a statement and answers how many rows it touched. */
export async function exec(db: Queryable, sql: Sql, params: unknown[] = []): Promise<number> {
  const { rowCount } = await run(db, sql, params);
  return rowCount ?? 0;
}

async function run(db: Queryable, sql: Sql, params: unknown[]) {
  try {
    const client = ambientClient(db);
    return await (typeof sql === 'string' ? client.query(sql, params) : client.query({ ...sql, values: params }));
  } catch (err) {
    throw translatePgError(err);
  }
}

const PG_UNAVAILABLE = new Set(['57P01', '57P02', '57P03', '53300', 'ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'ENOTFOUND']);

/**
 * PostgreSQL refuses U+0000 in text (22021) and in jsonb (22P05); JavaScript strings and JSON allow
 * it, and a string from JavaScript reaches the database as valid UTF-8 in every other respect.
 */
const NUL_REFUSED = new Set(['22021', '22P05']);

/** Maps driver errors to statuses: unique violations are conflicts, text PostgreSQL cannot store is a 400, a lost database is a 503. */
export function translatePgError(err: unknown): unknown {
  if (err instanceof AppError) return err;
  const code = (err as { code?: string }).code;
  if (code === '23505') return new AppError(409, uniqueMessage((err as { constraint?: string }).constraint), { cause: err });
  if (code === '22P02') return new AppError(400, 'Malformed identifier', { cause: err });
  if (code && NUL_REFUSED.has(code)) return new AppError(400, 'Text cannot contain the NUL character (\\u0000)', { cause: err });
  if (code && PG_UNAVAILABLE.has(code)) return new AppError(503, 'Database unavailable', { cause: err });
  if (err instanceof Error && /timeout exceeded when trying to connect|Connection terminated|not queryable/.test(err.message)) {
    return new AppError(503, 'Database unavailable', { cause: err });
  }
  return err;
}

function uniqueMessage(constraint: string | undefined): string {
  return constraint ? `Already exists (${constraint.replace(/_key$|_idx$|_uniq$/, '').replaceAll('_', ' ')})` : 'Already exists';
}

// Transactions that wrote outbox events, and who wants to hear when such a transaction commits.
const eventWriters = new WeakSet<object>();
const commitListeners = new Set<() => void>();

/** Marks a client (or the pool, for an autocommit write) as having written events. */
export function markEventsWritten(db: Queryable): void {
  // On the pool inside a request's transaction, the events commit with that transaction.
  const writer = ambientClient(db);
  if ('release' in writer) eventWriters.add(writer);
  else notifyEventsCommitted();
}

/** Called after every commit that wrote events in this process (the outbox relay listens). */
export function onEventsCommitted(listener: () => void): () => void {
  commitListeners.add(listener);
  return () => commitListeners.delete(listener);
}

function notifyEventsCommitted(): void {
  for (const listener of commitListeners) listener();
}

/**
 * A transaction that spans a whole request (an idempotent route's): every withTx on its pool joins
 * it as a savepoint, and the query helpers given that pool run on it, so the request's writes and
 * what the route records about them commit together or not at all.
 */
interface AmbientTx {
  pool: Pool;
  client: pg.PoolClient;
  /** Nested withTx calls take turns: savepoints on one connection cannot interleave. */
  turn: Promise<unknown>;
  inSavepoint: boolean;
  savepoints: number;
}
const ambient = new AsyncLocalStorage<AmbientTx>();

/** Runs `fn` in a transaction that every withTx and query helper on `pool` inside it joins. */
export async function withRequestTx<T>(pool: Pool, fn: (tx: pg.PoolClient) => Promise<T>): Promise<T> {
  return withTx(pool, (client) =>
    ambient.run({ pool, client, turn: Promise.resolve(), inSavepoint: false, savepoints: 0 }, () => fn(client)),
  );
}

function ambientClient(db: Queryable): Queryable {
  const store = ambient.getStore();
  return store && db === store.pool ? store.client : db;
}

async function inSavepoint<T>(store: AmbientTx, fn: (tx: pg.PoolClient) => Promise<T>): Promise<T> {
  if (store.inSavepoint) return fn(store.client);
  const run = async () => {
    const name = `sp_${++store.savepoints}`;
    await store.client.query(`SAVEPOINT ${name}`);
    try {
      const result = await ambient.run({ ...store, inSavepoint: true }, () => fn(store.client));
      await store.client.query(`RELEASE SAVEPOINT ${name}`);
      return result;
    } catch (err) {
      await store.client.query(`ROLLBACK TO SAVEPOINT ${name}`).catch(() => {});
      throw translatePgError(err);
    }
  };
  const mine = store.turn.then(run, run);
  store.turn = mine.catch(() => {});
  return mine;
}

/**
 * Runs `fn`, which needs no transaction of its own, so that a statement of it that fails leaves the
 * caller free to go on (a lost race it counts and retries): on `pool` as is, each statement on its
 * own, or inside a request's transaction in a savepoint of it, which the failure rolls back to
 * instead of aborting the whole transaction (PostgreSQL's 25P02 for every statement after). Called
 * inside a withTx of that transaction, it joins that savepoint, as a nested withTx does.
 */
export async function withSavepointInRequestTx<T>(pool: Pool, fn: (db: Queryable) => Promise<T>): Promise<T> {
  const store = ambient.getStore();
  return store && store.pool === pool ? inSavepoint(store, fn) : fn(pool);
}

/** Runs `fn` in a transaction; commits when it resolves, rolls back when it throws. */
export async function withTx<T>(pool: Pool, fn: (tx: pg.PoolClient) => Promise<T>): Promise<T> {
  const store = ambient.getStore();
  if (store && store.pool === pool) return inSavepoint(store, fn);
  let client: pg.PoolClient;
  try {
    client = await pool.connect();
  } catch (err) {
    throw translatePgError(err);
  }
  // A connection that breaks while no query runs on it (the transaction waits on other work) emits
  // 'error' on the client: unheard, that would end the process. The next query fails instead.
  let broken: Error | undefined;
  const onError = (err: Error) => {
    broken = err;
  };
  client.on('error', onError);
  // BEGIN goes out with the first statement instead of a round trip ahead of it (the connection
  // pipelines); should it fail, so do the statements behind it, and it is awaited before COMMIT.
  const begun = client.query('BEGIN');
  begun.catch(() => {});
  try {
    const result = await fn(client);
    await begun;
    await client.query('COMMIT');
    if (eventWriters.delete(client)) notifyEventsCommitted();
    return result;
  } catch (err) {
    eventWriters.delete(client);
    await client.query('ROLLBACK').catch(() => {});
    throw translatePgError(err);
  } finally {
    client.off('error', onError);
    // A broken connection is closed, not handed to the next caller.
    client.release(broken);
  }
}

/** A statement and its values, for pipelinedTx. */
export type Statement = { sql: Sql; params: unknown[] };

/**
 * Runs `statements` as one transaction written in one go and answers each one's rows. PostgreSQL
 * runs them back to back, so a lock the first one takes is held while they run, not across round
 * trips to this process and its event loop (a page read under its channel's lock). Inside a
 * request's transaction they run on it, one after the other.
 */
export async function pipelinedTx(pool: Pool, statements: Statement[]): Promise<Row[][]> {
  const store = ambient.getStore();
  if (store && store.pool === pool) {
    const answers: Row[][] = [];
    for (const { sql, params } of statements) answers.push(await many(store.client, sql, params));
    return answers;
  }
  let client: pg.PoolClient;
  try {
    client = await pool.connect();
  } catch (err) {
    throw translatePgError(err);
  }
  const send = (sql: Sql, params: unknown[] = []) =>
    typeof sql === 'string' ? client.query(sql, params) : client.query({ ...sql, values: params });
  // pg writes each query as it is queued, one system call each; held back, they leave in one.
  const socket = socketOf(client);
  socket?.cork();
  const sent = [send('BEGIN'), ...statements.map((s) => send(s.sql, s.params)), send('COMMIT')];
  socket?.uncork();
  const answers = await Promise.allSettled(sent);
  const failure = answers.find((a) => a.status === 'rejected');
  const error = failure && translatePgError(failure.reason);
  // A failed statement turns the COMMIT behind it into a rollback; a lost connection is not reused.
  client.release(error instanceof AppError && error.status === 503 ? (failure?.reason as Error) : undefined);
  if (failure) throw error;
  return answers.slice(1, -1).map((a) => (a as PromiseFulfilledResult<pg.QueryResult<Row>>).value.rows);
}

/** The client's socket to PostgreSQL: pg keeps it on its connection, which its types do not show. */
function socketOf(client: pg.PoolClient): Writable | undefined {
  return (client as unknown as { connection?: { stream?: Writable } }).connection?.stream;
}

/**
 * Runs a transaction that may lose a race again, up to `attempts` times: a serialisation failure or
 * a deadlock (40001/40P01), or a foreign-key violation (23503), which a write gets when a row it
 * refers to was deleted after it was checked. Run again, its checks answer as after that delete
 * (404), never the violation's 500. So `fn` must change nothing outside its transaction.
 */
const LOST_RACE = new Set(['40001', '40P01', '23503']);

export async function withRetryingTx<T>(pool: Pool, fn: (tx: pg.PoolClient) => Promise<T>, attempts = 5): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await withTx(pool, fn);
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (attempt >= attempts || !LOST_RACE.has(code ?? '')) throw err;
    }
  }
}
