import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestDatabase, type TestDatabase } from '@chat/testkit';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { createPool, many, type Pool } from '../src/db.ts';
import { MigrationChecksumError, MigrationOrderError, migrate } from '../src/migrate.ts';

/** The kit's own migrations, applied before every service's. */
const KIT = [
  'kit/0001_outbox_inbox.sql',
  'kit/0002_outbox_without_notify.sql',
  'kit/0003_idempotency_keys.sql',
  'kit/0004_next_message_id.sql',
  'kit/0005_processed_events_age.sql',
  'kit/0006_event_consumer_marks.sql',
];

const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

/** A fresh database and a folder of migration files for one test. */
async function fixture(files: Record<string, string>): Promise<{ pool: Pool; dir: string; db: TestDatabase }> {
  const db = await createTestDatabase(inject('backing').postgresUrl, 'migrate');
  const pool = createPool(db.url, 4);
  cleanups.push(async () => {
    await pool.end();
    await db.drop();
  });
  const dir = await mkdtemp(join(tmpdir(), 'migrations-'));
  for (const [name, sql] of Object.entries(files)) await writeFile(join(dir, name), sql);
  return { pool, dir, db };
}

const appliedIds = async (pool: Pool) =>
  (await many<{ id: string }>(pool, 'SELECT id FROM schema_migrations ORDER BY applied_at, id')).map((r) => r.id);

const tableExists = async (pool: Pool, table: string) =>
  (await many(pool, 'SELECT 1 FROM information_schema.tables WHERE table_name = $1', [table])).length === 1;

describe('migrate', () => {
  it('applies the kit migrations, then the service files in numeric order, each once', async () => {
    const { pool, dir } = await fixture({
      '0002_add_column.sql': "ALTER TABLE notes ADD COLUMN body text NOT NULL DEFAULT '';",
      '0001_notes.sql': 'CREATE TABLE notes (id int PRIMARY KEY);',
      '0003_seed.sql': "INSERT INTO notes (id, body) VALUES (1, 'first');",
      'README.md': 'not a migration',
    });
    const first = await migrate(pool, dir);
    expect(first).toEqual([...KIT, 'service/0001_notes.sql', 'service/0002_add_column.sql', 'service/0003_seed.sql']);
    expect(await tableExists(pool, 'outbox')).toBe(true);

    expect(await migrate(pool, dir)).toEqual([]);
    expect(await many(pool, 'SELECT id, body FROM notes')).toEqual([{ id: 1, body: 'first' }]);
    expect(await appliedIds(pool)).toHaveLength(KIT.length + 3);
  });

  it('applies only the new file on a later run', async () => {
    const { pool, dir } = await fixture({ '0001_a.sql': 'CREATE TABLE a (id int);' });
    await migrate(pool, dir);
    await writeFile(join(dir, '0002_b.sql'), 'CREATE TABLE b (id int);');
    expect(await migrate(pool, dir)).toEqual(['service/0002_b.sql']);
  });

  it('rolls back a failing file entirely and stops before the next one', async () => {
    const { pool, dir } = await fixture({
      '0001_ok.sql': 'CREATE TABLE ok (id int);',
      '0002_broken.sql': 'CREATE TABLE half (id int);\nINSERT INTO missing_table VALUES (1);',
      '0003_after.sql': 'CREATE TABLE after_broken (id int);',
    });
    await expect(migrate(pool, dir)).rejects.toThrow(/Migration service\/0002_broken\.sql failed: .*missing_table/);
    expect(await tableExists(pool, 'ok')).toBe(true);
    expect(await tableExists(pool, 'half')).toBe(false);
    expect(await tableExists(pool, 'after_broken')).toBe(false);
    expect(await appliedIds(pool)).toEqual([...KIT, 'service/0001_ok.sql']);

    await writeFile(join(dir, '0002_broken.sql'), 'CREATE TABLE half (id int);');
    expect(await migrate(pool, dir)).toEqual(['service/0002_broken.sql', 'service/0003_after.sql']);
  });

  it('refuses to go on when an applied file changed, and applies nothing after it', async () => {
    const { pool, dir } = await fixture({ '0001_a.sql': 'CREATE TABLE a (id int);' });
    await migrate(pool, dir);
    await writeFile(join(dir, '0001_a.sql'), 'CREATE TABLE a (id bigint);');
    await writeFile(join(dir, '0002_b.sql'), 'CREATE TABLE b (id int);');
    await expect(migrate(pool, dir)).rejects.toThrow(MigrationChecksumError);
    await expect(migrate(pool, dir)).rejects.toThrow(/0001_a\.sql changed after it was applied/);
    expect(await tableExists(pool, 'b')).toBe(false);
  });

  it('refuses a new file numbered before one already applied, and applies nothing', async () => {
    const { pool, dir } = await fixture({ '0001_a.sql': 'CREATE TABLE a (id int);', '0100_c.sql': 'CREATE TABLE c (id int);' });
    await migrate(pool, dir);
    await writeFile(join(dir, '0002_b.sql'), 'CREATE TABLE b (id int);');
    await expect(migrate(pool, dir)).rejects.toThrow(MigrationOrderError);
    await expect(migrate(pool, dir)).rejects.toThrow(/0002_b\.sql sorts before service\/0100_c\.sql/);
    expect(await tableExists(pool, 'b')).toBe(false);
  });

  it('applies each file exactly once when several replicas migrate at the same time', async () => {
    const { pool, dir, db } = await fixture({
      '0001_counter.sql': 'CREATE TABLE runs (n int); INSERT INTO runs VALUES (1);',
      // Slow enough that the replicas overlap: without the lock the second would run it too.
      '0002_slow.sql': 'SELECT pg_sleep(0.3); INSERT INTO runs VALUES (2);',
    });
    const replicas = [createPool(db.url, 2), createPool(db.url, 2), createPool(db.url, 2)];
    try {
      const results = await Promise.all(replicas.map((replica) => migrate(replica, dir)));
      expect(results.flat().sort()).toEqual([...KIT, 'service/0001_counter.sql', 'service/0002_slow.sql'].sort());
      expect(await many(pool, 'SELECT n FROM runs ORDER BY n')).toEqual([{ n: 1 }, { n: 2 }]);
    } finally {
      await Promise.all(replicas.map((replica) => replica.end()));
    }
  });

  it('releases its lock, so the next run on the same connection pool is not blocked', async () => {
    const { pool, dir } = await fixture({ '0001_bad.sql': 'SELECT * FROM nope;' });
    await expect(migrate(pool, dir)).rejects.toThrow();
    const locks = await many(
      pool,
      "SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
    );
    expect(locks).toEqual([]);
  });
});
