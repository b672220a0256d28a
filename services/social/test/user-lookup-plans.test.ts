import type { Queryable } from '@chat/kit';
import { afterAll, describe, expect, it } from 'vitest';
import { conversationsQuery } from '../src/db/conversations.ts';
import { listBlocked, listFriends, listRequests } from '../src/db/relationships.ts';
import { createHarness } from './harness.ts';

/**
 * Issue 18: lists of users (conversations' participants, friends, blocks, requests) look each user
 * up by its key. Joined to the whole users table instead, a database without statistics (right
 * after a burst of registrations, as in the bench) hashed every user of the platform per list, and
 * once per conversation in the conversation list.
 */
const h = await createHarness();
afterAll(() => h.close());

type PlanNode = { 'Node Type': string; 'Relation Name'?: string; Plans?: PlanNode[] };
const nodes = (plan: PlanNode): PlanNode[] => [plan, ...(plan.Plans ?? []).flatMap(nodes)];

/** How PostgreSQL would read the users table for this statement. */
async function userScans(text: string, params: unknown[]): Promise<string[]> {
  const { rows } = await h.runtime.pool.query(`EXPLAIN (FORMAT JSON) ${text}`, params);
  return nodes(rows[0]['QUERY PLAN'][0].Plan)
    .filter((n) => n['Relation Name'] === 'users')
    .map((n) => n['Node Type']);
}

/** The statements a db function sends, run for real. */
function recording(statements: { text: string; params: unknown[] }[]): Queryable {
  return {
    query: (sql: string | { text: string; values: unknown[] }, params: unknown[]) => {
      // A prepared statement comes as one object with its values.
      const [text, values] = typeof sql === 'string' ? [sql, params] : [sql.text, sql.values];
      statements.push({ text, params: values });
      return h.runtime.pool.query(text, values);
    },
  } as unknown as Queryable;
}

// Many users the lists have nothing to do with, and no statistics about them.
await h.runtime.pool.query(
  `INSERT INTO users (id, username, display_name, version)
   SELECT gen_random_uuid(), 'crowd_' || i, 'Crowd ' || i, now() FROM generate_series(1, 2000) i`,
);

describe('the conversation list', () => {
  it('never scans the users table, and lists each conversation with its participants', async () => {
    const reader = await h.addUser();
    const contacts = [await h.addUser(), await h.addUser(), await h.addUser()];
    for (const contact of contacts)
      expect((await h.call(reader, 'POST', '/v1/dm/conversations', { userIds: [contact.id] })).status).toBe(201);
    const query = conversationsQuery(reader.id, { limit: 50 });
    const scans = await userScans(query.text, query.params);
    expect(scans.length).toBeGreaterThan(0);
    expect(scans).not.toContain('Seq Scan');

    const listed = await h.call(reader, 'GET', '/v1/dm/conversations');
    expect(listed.status).toBe(200);
    expect(listed.body).toHaveLength(3);
    for (const conversation of listed.body) {
      const names = conversation.participants.map((p: { username: string }) => p.username).sort();
      const contact = contacts.find((c) => names.includes(c.username));
      expect(names).toEqual([reader.username, contact?.username].sort());
    }
  });

  it('reads friends, blocks and requests without a scan of the users table', async () => {
    const me = await h.addUser();
    const statements: { text: string; params: unknown[] }[] = [];
    const page = { limit: 50 };
    expect(await listFriends(recording(statements), me.id, page)).toEqual([]);
    expect(await listBlocked(recording(statements), me.id, page)).toEqual([]);
    expect(await listRequests(recording(statements), me.id, page)).toEqual([]);
    expect(statements).toHaveLength(3);
    for (const { text, params } of statements) {
      const scans = await userScans(text, params);
      expect(scans.length).toBeGreaterThan(0);
      expect(scans).not.toContain('Seq Scan');
    }
  });
});
