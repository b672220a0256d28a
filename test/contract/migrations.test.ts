import { readdir } from 'node:fs/promises';
import { createPool, many, migrate } from '@chat/kit';
import { createTestDatabase } from '@chat/testkit';
import { describe, expect, inject, it } from 'vitest';

/**
 * Every service's migrations, as shipped: named `NNNN_description.sql` with unique numbers (a new
 * one takes the next number after the highest; `migrate` refuses one that sorts before an applied
 * file), applying on an empty database, and changing nothing when applied again.
 */
const SERVICES = ['auth', 'guilds', 'social', 'media', 'music'];
/** Files that shared a number before the rule; databases record them by name, so they keep it. */
const SHARED_NUMBERS_KEPT = new Set(['auth/0002_badges.sql']);

describe.each(SERVICES)('%s migrations', (service) => {
  const dir = new URL(`../../services/${service}/migrations`, import.meta.url).pathname;

  it('are numbered NNNN_description.sql, one file per number', async () => {
    const files = (await readdir(dir)).filter((f) => f.endsWith('.sql'));
    expect(files.length).toBeGreaterThan(0);
    for (const file of files) expect(file).toMatch(/^\d{4}_[a-z0-9_]+\.sql$/);
    const numbers = files.filter((f) => !SHARED_NUMBERS_KEPT.has(`${service}/${f}`)).map((f) => f.slice(0, 4));
    expect(new Set(numbers).size).toBe(numbers.length);
  });

  it('apply on an empty database, and a second run applies nothing and changes nothing', async () => {
    const db = await createTestDatabase(inject('backing').postgresUrl, `mig${service}`);
    const pool = createPool(db.url, 2);
    try {
      const files = (await readdir(dir)).filter((f) => f.endsWith('.sql')).sort();
      const first = await migrate(pool, dir);
      expect(first.filter((id) => id.startsWith('service/'))).toEqual(files.map((f) => `service/${f}`));
      const schema = () =>
        many(
          pool,
          `SELECT table_name, column_name, data_type, is_nullable, column_default FROM information_schema.columns
           WHERE table_schema = 'public' ORDER BY table_name, column_name`,
        );
      const before = await schema();
      expect(await migrate(pool, dir)).toEqual([]);
      expect(await schema()).toEqual(before);
    } finally {
      await pool.end();
      await db.drop();
    }
  });
});
