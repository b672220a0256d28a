import { afterAll, describe, expect, it } from 'vitest';
import { conversationsQuery } from '../src/db/conversations.ts';
import { createHarness } from './harness.ts';

/**
 * Issue 18: the conversation list looks each participant's user up by its key. Joined to the whole
 * users table instead, a database without statistics (right after a burst of registrations, as in
 * the bench) hashed every user of the platform once per conversation listed.
 */
const h = await createHarness();
afterAll(() => h.close());

type PlanNode = { 'Node Type': string; 'Relation Name'?: string; Plans?: PlanNode[] };
const nodes = (plan: PlanNode): PlanNode[] => [plan, ...(plan.Plans ?? []).flatMap(nodes)];

describe('the conversation list', () => {
  it('never scans the users table, and lists each conversation with its participants', async () => {
    const reader = await h.addUser();
    const contacts = [await h.addUser(), await h.addUser(), await h.addUser()];
    for (const contact of contacts)
      expect((await h.call(reader, 'POST', '/v1/dm/conversations', { userIds: [contact.id] })).status).toBe(201);
    // Many users the list has nothing to do with, and no statistics about them.
    await h.runtime.pool.query(
      `INSERT INTO users (id, username, display_name, version)
       SELECT gen_random_uuid(), 'crowd_' || i, 'Crowd ' || i, now() FROM generate_series(1, 2000) i`,
    );

    const query = conversationsQuery(reader.id, { limit: 50 });
    const { rows } = await h.runtime.pool.query(`EXPLAIN (FORMAT JSON) ${query.text}`, query.params);
    const scans = nodes(rows[0]['QUERY PLAN'][0].Plan).filter((n) => n['Relation Name'] === 'users');
    expect(scans.length).toBeGreaterThan(0);
    expect(scans.map((n) => n['Node Type'])).not.toContain('Seq Scan');

    const listed = await h.call(reader, 'GET', '/v1/dm/conversations');
    expect(listed.status).toBe(200);
    expect(listed.body).toHaveLength(3);
    for (const conversation of listed.body) {
      const names = conversation.participants.map((p: { username: string }) => p.username).sort();
      const contact = contacts.find((c) => names.includes(c.username));
      expect(names).toEqual([reader.username, contact?.username].sort());
    }
  });
});
