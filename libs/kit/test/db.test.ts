import type { Writable } from 'node:stream';
import { createTestDatabase, startTcpProxy } from '@chat/testkit';
import { afterAll, describe, expect, inject, it } from 'vitest';
import {
  createPool,
  exec,
  many,
  maybeOne,
  one,
  pipelinedTx,
  prepared,
  translatePgError,
  withRequestTx,
  withRetryingTx,
  withTx,
} from '../src/db.ts';
import { AppError } from '../src/errors.ts';

const db = await createTestDatabase(inject('backing').postgresUrl, 'kitdb');
const pool = createPool(db.url, 4);
await pool.query(`CREATE TABLE items (id int PRIMARY KEY, name text NOT NULL CONSTRAINT items_name_key UNIQUE,
  created_at timestamptz NOT NULL DEFAULT now(), mask bigint NOT NULL DEFAULT 0)`);
afterAll(async () => {
  await pool.end();
  await db.drop();
});

async function appError(promise: Promise<unknown>): Promise<AppError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AppError);
  return err as AppError;
}

describe('query helpers', () => {
  it('exec answers how many rows it touched; many answers every row', async () => {
    expect(await exec(pool, "INSERT INTO items (id, name) VALUES (1, 'one'), (2, 'two'), (3, 'three')")).toBe(3);
    expect(await exec(pool, 'UPDATE items SET mask = $1 WHERE id > $2', [2 ** 40, 1])).toBe(2);
    expect(await exec(pool, 'DELETE FROM items WHERE id = 99')).toBe(0);
    const rows = await many<{ id: number; mask: number }>(pool, 'SELECT id, mask FROM items ORDER BY id');
    expect(rows).toEqual([
      { id: 1, mask: 0 },
      { id: 2, mask: 2 ** 40 },
      { id: 3, mask: 2 ** 40 },
    ]);
    expect(await many(pool, 'SELECT * FROM items WHERE id > 100')).toEqual([]);
  });

  it('one answers the row, or a 404 naming what was looked for', async () => {
    await exec(pool, "INSERT INTO items (id, name) VALUES (10, 'ten')");
    expect(await one(pool, 'SELECT id, name FROM items WHERE id = $1', [10], 'Item')).toEqual({ id: 10, name: 'ten' });
    const err = await appError(one(pool, 'SELECT id FROM items WHERE id = $1', [404], 'Item'));
    expect(err.status).toBe(404);
    expect(err.message).toBe('Item not found');
  });

  it('runs a named statement (prepared once per connection), in a request’s transaction too', async () => {
    const named = { name: 'kit_items_insert', text: 'INSERT INTO items (id, name) VALUES ($1, $2) RETURNING id, name' };
    expect(await one(pool, named, [700, 'seven hundred'])).toEqual({ id: 700, name: 'seven hundred' });
    expect(await one(pool, named, [701, 'seven hundred one'])).toEqual({ id: 701, name: 'seven hundred one' });
    const failed = withRequestTx(pool, async () => {
      await one(pool, named, [702, 'seven hundred two']);
      throw new Error('the request failed');
    });
    await expect(failed).rejects.toThrow('the request failed');
    // Run on the request's connection, it went with its rollback.
    expect(await many(pool, 'SELECT id FROM items WHERE id >= 700 ORDER BY id')).toEqual([{ id: 700 }, { id: 701 }]);
  });

  it('maybeOne answers undefined when there is no row', async () => {
    expect(await maybeOne(pool, 'SELECT id FROM items WHERE id = $1', [-1])).toBeUndefined();
  });

  it('answers timestamps as ISO strings in UTC', async () => {
    const row = await one<{ at: string }>(pool, "SELECT '2024-03-01 12:30:00.123456+05:30'::timestamptz AS at");
    expect(row.at).toBe('2024-03-01T07:00:00.123Z');
  });

  it('does not crash on an infinite timestamp', async () => {
    const row = await one<{ at: string }>(pool, "SELECT 'infinity'::timestamptz AS at");
    expect(row.at).toBe('infinity');
  });

  it('turns a unique violation into a 409 naming the constraint, without the driver detail', async () => {
    await exec(pool, "INSERT INTO items (id, name) VALUES (20, 'dup')");
    const err = await appError(exec(pool, "INSERT INTO items (id, name) VALUES (21, 'dup')"));
    expect(err.status).toBe(409);
    expect(err.message).toBe('Already exists (items name)');
    expect(err.message).not.toContain('dup');
    expect(await many(pool, "SELECT id FROM items WHERE name = 'dup'")).toEqual([{ id: 20 }]);
  });

  it('turns a malformed identifier into a 400', async () => {
    await exec(pool, 'CREATE TABLE IF NOT EXISTS things (id uuid PRIMARY KEY)');
    const err = await appError(maybeOne(pool, 'SELECT id FROM things WHERE id = $1', ['not-a-uuid']));
    expect(err.status).toBe(400);
  });

  it('turns a NUL character, which PostgreSQL cannot store in text or jsonb, into a 400 that writes nothing', async () => {
    await exec(pool, 'CREATE TABLE IF NOT EXISTS notes (id int PRIMARY KEY, body text, doc jsonb)');
    const inText = await appError(exec(pool, 'INSERT INTO notes (id, body) VALUES (1, $1)', ['a\u0000b']));
    expect(inText.status).toBe(400);
    expect(inText.message).toBe('Text cannot contain the NUL character (\\u0000)');
    const inJson = await appError(exec(pool, 'INSERT INTO notes (id, doc) VALUES (2, $1)', [{ content: 'a\u0000b' }]));
    expect(inJson).toMatchObject({ status: 400, message: inText.message });
    expect(await many(pool, 'SELECT id FROM notes')).toEqual([]);
  });

  it('turns a lost database into a 503 and keeps other errors as they are', () => {
    const lost = translatePgError(Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }));
    expect(lost).toMatchObject({ status: 503, message: 'Database unavailable' });
    const refused = translatePgError(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }));
    expect(refused).toMatchObject({ status: 503 });
    const syntax = Object.assign(new Error('syntax error'), { code: '42601' });
    expect(translatePgError(syntax)).toBe(syntax);
  });

  it('answers 503 when the database cannot be reached', async () => {
    const nowhere = createPool('postgres://postgres@127.0.0.1:1/none', 1);
    try {
      expect((await appError(many(nowhere, 'SELECT 1'))).status).toBe(503);
      expect((await appError(withTx(nowhere, async () => 1))).status).toBe(503);
    } finally {
      await nowhere.end();
    }
  });
});

describe('prepared', () => {
  it('names a statement after its text, and the connection keeps it prepared for the next runs', async () => {
    const byName = prepared('SELECT name FROM items WHERE id = $1');
    expect(prepared('SELECT name FROM items WHERE id = $1')).toEqual(byName);
    expect(prepared('SELECT name FROM items WHERE id = $2').name).not.toBe(byName.name);
    await exec(pool, "INSERT INTO items (id, name) VALUES (140, 'forty'), (141, 'forty-one')");
    const client = await pool.connect();
    try {
      expect(await maybeOne(client, byName, [140])).toEqual({ name: 'forty' });
      expect(await maybeOne(client, byName, [141])).toEqual({ name: 'forty-one' });
      const kept = await many<{ statement: string }>(client, 'SELECT statement FROM pg_prepared_statements WHERE name = $1', [byName.name]);
      expect(kept).toEqual([{ statement: byName.text }]);
    } finally {
      client.release();
    }
  });
});

/** Keeps this process's event loop busy for `ms`, so that it neither reads nor writes meanwhile. */
function blockEventLoop(ms: number): void {
  const until = Date.now() + ms;
  while (Date.now() < until) {}
}

/** How many times `socket` hands bytes to the kernel from now on (a write or a gathered writev). */
function countWrites(socket: Writable): () => number {
  let writes = 0;
  const raw = socket as Writable & { _write: Writable['_write']; _writev?: Writable['_writev'] };
  const write = raw._write.bind(raw);
  const writev = raw._writev?.bind(raw);
  raw._write = (...args) => {
    writes++;
    write(...args);
  };
  if (writev) {
    raw._writev = (...args) => {
      writes++;
      writev(...args);
    };
  }
  return () => writes;
}

describe('withTx', () => {
  it('commits when the function resolves and answers its result', async () => {
    const result = await withTx(pool, async (tx) => {
      await exec(tx, "INSERT INTO items (id, name) VALUES (30, 'committed')");
      return 'done';
    });
    expect(result).toBe('done');
    expect(await maybeOne(pool, 'SELECT id FROM items WHERE id = 30')).toEqual({ id: 30 });
  });

  it('rolls back everything when the function throws, and rethrows its error', async () => {
    const failure = new AppError(403, 'Missing permission');
    await expect(
      withTx(pool, async (tx) => {
        await exec(tx, "INSERT INTO items (id, name) VALUES (40, 'rolled back')");
        await exec(tx, "UPDATE items SET name = 'changed' WHERE id = 30");
        throw failure;
      }),
    ).rejects.toBe(failure);
    expect(await maybeOne(pool, 'SELECT id FROM items WHERE id = 40')).toBeUndefined();
    expect(await one(pool, 'SELECT name FROM items WHERE id = 30')).toEqual({ name: 'committed' });
  });

  it('rolls back on a unique violation inside and answers 409', async () => {
    const err = await appError(
      withTx(pool, async (tx) => {
        await exec(tx, "INSERT INTO items (id, name) VALUES (50, 'fifty')");
        await tx.query("INSERT INTO items (id, name) VALUES (51, 'fifty')");
      }),
    );
    expect(err.status).toBe(409);
    expect(await maybeOne(pool, 'SELECT id FROM items WHERE id = 50')).toBeUndefined();
  });

  it('sends BEGIN with the first statement, not a round trip ahead of it', async () => {
    await pool.query('SELECT 1'); // an idle connection, so that BEGIN leaves at once
    const answered = withTx(pool, async (tx) =>
      maybeOne<{ at: number; inside: boolean }>(
        tx,
        'SELECT (extract(epoch FROM clock_timestamp()) * 1000)::float8 AS at, now() <> statement_timestamp() AS inside',
      ),
    );
    // Let the transaction start without reading any answer (no I/O phase of the event loop)...
    for (let i = 0; i < 20; i++) await new Promise((resolve) => process.nextTick(resolve));
    // ...then keep this loop busy: were BEGIN answered first, the statement would only leave after this.
    blockEventLoop(300);
    const unblockedAt = Date.now();
    const ran = await answered;
    expect(ran?.at).toBeLessThan(unblockedAt - 100);
    expect(ran?.inside).toBe(true);
  });

  it('gives its connection back to the pool even after failures', async () => {
    for (let i = 0; i < 10; i++) {
      await withTx(pool, async () => {
        throw new Error('boom');
      }).catch(() => {});
    }
    expect(pool.totalCount).toBeLessThanOrEqual(4);
    expect(pool.idleCount).toBe(pool.totalCount);
  });
});

describe('pipelinedTx', () => {
  it('answers each statement’s rows, in one transaction', async () => {
    const [inserted, seen, txids] = await pipelinedTx(pool, [
      { sql: "INSERT INTO items (id, name) VALUES (40, 'pipelined forty') RETURNING id", params: [] },
      { sql: prepared('SELECT name FROM items WHERE id = $1'), params: [40] },
      { sql: 'SELECT txid_current() AS a, txid_current() AS b', params: [] },
    ]);
    expect(inserted).toEqual([{ id: 40 }]);
    expect(seen).toEqual([{ name: 'pipelined forty' }]);
    expect(txids?.[0]?.a).toBe(txids?.[0]?.b);
  });

  it('runs every statement while this process does nothing: they are all sent before the first answer', async () => {
    await pool.query('SELECT 1'); // an idle connection, so that the statements leave at once
    const answered = pipelinedTx(pool, [
      { sql: 'SELECT pg_advisory_xact_lock(4242)', params: [] },
      { sql: 'SELECT pg_sleep(0.05)', params: [] },
      { sql: "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::float8 AS at, 'x' AS last", params: [] },
    ]);
    await new Promise((resolve) => setImmediate(resolve));
    // Sent one after another, the last statement would wait for this loop to read the sleep's answer.
    blockEventLoop(400);
    const unblockedAt = Date.now();
    const last = (await answered)[2]?.[0];
    expect(last?.last).toBe('x');
    expect(last?.at as number).toBeLessThan(unblockedAt - 100);
    // And the lock went with the transaction.
    expect(await maybeOne(pool, 'SELECT pg_try_advisory_xact_lock(4242) AS free')).toEqual({ free: true });
  });

  it('writes the whole transaction to PostgreSQL in one system call', async () => {
    const single = createPool(db.url, 1);
    try {
      await single.query('SELECT 1'); // the one connection, idle
      const client = await single.connect();
      const socket = (client as unknown as { connection: { stream: Writable } }).connection.stream;
      client.release();
      const writes = countWrites(socket);
      const answers = await pipelinedTx(single, [
        { sql: 'SELECT 1 AS a', params: [] },
        { sql: prepared('SELECT $1::int AS b'), params: [2] },
      ]);
      expect(answers).toEqual([[{ a: 1 }], [{ b: 2 }]]);
      expect(writes()).toBe(1);
    } finally {
      await single.end();
    }
  });

  it('rolls back every statement when one fails, answers its error, and gives the connection back', async () => {
    const failed = pipelinedTx(pool, [
      { sql: "INSERT INTO items (id, name) VALUES (41, 'pipelined twice')", params: [] },
      { sql: "INSERT INTO items (id, name) VALUES (42, 'pipelined twice')", params: [] },
      { sql: 'SELECT 1', params: [] },
    ]);
    expect((await appError(failed)).status).toBe(409);
    expect(await many(pool, 'SELECT id FROM items WHERE id IN (41, 42)')).toEqual([]);
    expect(pool.idleCount).toBe(pool.totalCount);
    expect(await pipelinedTx(pool, [{ sql: 'SELECT 3 AS three', params: [] }])).toEqual([[{ three: 3 }]]);
  });

  it('runs on a request’s transaction and rolls back with it', async () => {
    const failed = withRequestTx(pool, async () => {
      await pipelinedTx(pool, [{ sql: "INSERT INTO items (id, name) VALUES (43, 'forty-three')", params: [] }]);
      expect(await many(pool, 'SELECT id FROM items WHERE id = 43')).toEqual([{ id: 43 }]);
      throw new AppError(400, 'changed my mind');
    });
    expect((await appError(failed)).status).toBe(400);
    expect(await many(pool, 'SELECT id FROM items WHERE id = 43')).toEqual([]);
  });
});

describe('a connection that breaks inside a transaction', () => {
  it('fails that transaction with 503 instead of ending the process, and the pool serves again once the link is back', async () => {
    const target = new URL(db.url);
    const proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port) });
    target.hostname = '127.0.0.1';
    target.port = String(proxy.port);
    const proxied = createPool(target.toString(), 2);
    try {
      const failed = withTx(proxied, async (tx) => {
        await tx.query('SELECT 1');
        // The link drops while no query runs: the client hears it as an 'error' event.
        const ended = new Promise((resolve) => tx.once('end', resolve));
        proxy.cut();
        await ended;
        await tx.query('SELECT 1');
      });
      expect((await appError(failed)).status).toBe(503);
      proxy.restore();
      expect(await withTx(proxied, (tx) => maybeOne(tx, 'SELECT 2 AS two'))).toEqual({ two: 2 });
    } finally {
      await proxied.end();
      await proxy.close();
    }
  });
});

describe('withRetryingTx', () => {
  it('runs a write again when a row it refers to was deleted after its check, so it answers as after the delete', async () => {
    await pool.query('CREATE TABLE parents (id int PRIMARY KEY)');
    await pool.query('CREATE TABLE children (parent_id int NOT NULL REFERENCES parents (id) ON DELETE CASCADE)');
    await exec(pool, 'INSERT INTO parents (id) VALUES (1), (2)');
    let attempts = 0;
    const addChild = (parentId: number) =>
      withRetryingTx(pool, async (tx) => {
        attempts++;
        await one(tx, 'SELECT id FROM parents WHERE id = $1', [parentId], 'Parent');
        // Another transaction deletes the parent between the check and the insert, on the first attempt only.
        if (attempts === 1) await exec(pool, 'DELETE FROM parents WHERE id = $1', [parentId]);
        await exec(tx, 'INSERT INTO children (parent_id) VALUES ($1)', [parentId]);
      });
    const err = await appError(addChild(1));
    expect([err.status, err.message, attempts]).toEqual([404, 'Parent not found', 2]);

    // A reference that stays broken is not a race: it fails as it is after the last attempt.
    attempts = 0;
    const broken = withRetryingTx(
      pool,
      async (tx) => {
        attempts++;
        await exec(tx, 'INSERT INTO children (parent_id) VALUES (99)');
      },
      3,
    );
    await expect(broken).rejects.toMatchObject({ code: '23503' });
    expect(attempts).toBe(3);
    expect(await many(pool, 'SELECT parent_id FROM children')).toEqual([]);
  });
});
