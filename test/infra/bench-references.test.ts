import { createPool, type Pool } from '@chat/kit';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { postStatement } from '../../scripts/bench/references.ts';

const backing = inject('backing');
const admin = createPool(backing.postgresUrl, 1);
afterAll(() => admin.end());

const benchPostDatabases = async () =>
  (await admin.query<{ datname: string }>("SELECT datname FROM pg_database WHERE datname LIKE 't_bench_post_%'")).rows.map(
    (r) => r.datname,
  );

/** The reference prepared, with a connection to the database it made (found as the one that was not there before). */
async function withPrepared(check: (operation: () => Promise<unknown>, db: Pool) => Promise<void>): Promise<void> {
  const before = new Set(await benchPostDatabases());
  const { operation, cleanUp } = await postStatement.prepare(backing);
  const [name] = (await benchPostDatabases()).filter((d) => !before.has(d));
  const url = new URL(backing.postgresUrl);
  url.pathname = `/${name}`;
  const db = createPool(url.toString(), 1);
  try {
    await check(operation, db);
  } finally {
    await db.end();
    await cleanUp();
  }
}

describe('the post statement reference', () => {
  it("posts through guilds' own statement: each operation writes a message and its event", async () => {
    await withPrepared(async (operation, db) => {
      for (let i = 0; i < 3; i++) await operation();
      const { rows: messages } = await db.query<{ id: string }>('SELECT id FROM messages ORDER BY id');
      const { rows: events } = await db.query("SELECT subject, payload -> 'data' AS data FROM outbox ORDER BY seq");
      expect(messages).toHaveLength(3);
      // The statement fills in the id and the author's name from the users read-model, as for a real post.
      expect(events).toEqual(
        messages.map((m) => ({ subject: 'guilds.message.created', data: expect.objectContaining({ id: m.id, authorName: 'bench_post' }) })),
      );
    });
  });

  it('does not measure refusals: an operation the statement refuses throws and writes nothing', async () => {
    await withPrepared(async (operation, db) => {
      // A change of access moves the server's version past the one the reference posts with.
      await db.query('UPDATE servers SET access_version = access_version + 1');
      await expect(operation()).rejects.toThrow('post statement answered stale');
      expect((await db.query('SELECT 1 FROM messages')).rowCount).toBe(0);
    });
  });
});
