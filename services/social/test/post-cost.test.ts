import { countRoundTrips } from '@chat/testkit';
import { v7 as uuidv7 } from 'uuid';
import { afterAll, describe, expect, it } from 'vitest';
import { createHarness, eventually } from './harness.ts';

/** The direct-message post path of issue 18: one statement per post, ids still in commit order. */

const h = await createHarness();
afterAll(() => h.close());

type User = Awaited<ReturnType<typeof h.addUser>>;

async function conversationOf(a: User, ...others: User[]): Promise<string> {
  const res = await h.call(a, 'POST', '/v1/dm/conversations', { userIds: others.map((o) => o.id) });
  expect([200, 201]).toContain(res.status);
  return res.body.id;
}

const send = (user: User, conversationId: string, content = 'hello') =>
  h.call(user, 'POST', '/v1/dm/messages', { conversationId, content });
const contents = async (conversationId: string) =>
  (await h.runtime.pool.query('SELECT content FROM direct_messages WHERE conversation_id = $1 ORDER BY id', [conversationId])).rows.map(
    (r) => r.content,
  );

/** post_direct_message called as the service does, on `db` (a transaction held open, or the pool). */
async function postInSql(db: { query: typeof h.runtime.pool.query }, conversationId: string, senderId: string, content: string) {
  const id = uuidv7();
  const event = {
    id: uuidv7(),
    subject: 'social.dm.created',
    occurredAt: new Date().toISOString(),
    data: { message: { id, content }, participantIds: [] },
  };
  const { rows } = await db.query('SELECT * FROM post_direct_message($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)', [
    id,
    conversationId,
    senderId,
    content,
    {},
    null,
    'default',
    new Date().toISOString(),
    event.id,
    event.subject,
    event,
    {},
  ]);
  return rows[0] as { outcome: string; id: string | null; audience_ids: string[] | null; sender_name: string | null };
}

describe('the cost of a direct message', () => {
  it('is one round trip to PostgreSQL, and writes the message with its event', async () => {
    const [alice, bob] = [await h.addUser(), await h.addUser()];
    const conversationId = await conversationOf(alice, bob);
    const { result, roundTrips, statements } = await countRoundTrips(() => send(alice, conversationId));
    expect(result.status).toBe(201);
    expect(statements).toEqual(['social_post_direct_message']);
    expect(roundTrips).toBe(1);
    const [event] = (await h.events('social.dm.created')).filter((e) => (e.data.message as { id: string }).id === result.body.id);
    expect(event?.data).toEqual({ message: { ...result.body, reactions: undefined }, participantIds: [alice.id, bob.id].sort() });
  });
});

describe('paging against a post in flight', () => {
  it('makes a reader wait for a post that has its id but has not committed, so no cursor passes over it', async () => {
    const [alice, bob] = [await h.addUser(), await h.addUser()];
    const conversationId = await conversationOf(alice, bob);
    const first = (await send(alice, conversationId, 'first')).body.id;
    const slow = await h.runtime.pool.connect();
    try {
      await slow.query('BEGIN');
      const late = await postInSql(slow, conversationId, bob.id, 'late');
      expect(late.outcome).toBe('posted');
      // A post that starts later does not wait for it, and commits first with a greater id.
      const quick = (await send(alice, conversationId, 'quick')).body.id;
      expect(late.id! < quick).toBe(true);
      let answered = false;
      const reading = h.call(bob, 'GET', `/v1/dm/conversations/${conversationId}/messages?after=${first}`).then((res) => {
        answered = true;
        return res;
      });
      // The reader queues behind the open post's lock.
      await eventually(async () => {
        const { rows } = await h.runtime.pool.query(
          `SELECT count(*)::int AS n FROM pg_locks l JOIN pg_database d ON d.oid = l.database
           WHERE l.locktype = 'advisory' AND NOT l.granted AND d.datname = current_database()`,
        );
        return rows[0].n > 0;
      });
      expect(answered).toBe(false);
      await slow.query('COMMIT');
      const page = await reading;
      expect(page.body.map((m: { id: string }) => m.id)).toEqual([quick, late.id]);
    } finally {
      slow.release();
    }
  });
});

describe('post_direct_message', () => {
  it('refuses a stranger, a blocked pair and a reply from elsewhere, writing nothing', async () => {
    const [alice, bob, eve] = [await h.addUser(), await h.addUser(), await h.addUser()];
    const conversationId = await conversationOf(alice, bob);
    const other = await conversationOf(alice, eve);
    const elsewhere = (await send(alice, other, 'elsewhere')).body.id;
    const eventsBefore = (await h.events('social.dm.created')).length;
    expect((await postInSql(h.runtime.pool, conversationId, eve.id, 'stranger')).outcome).toBe('not_found');
    const reply = await h.call(alice, 'POST', '/v1/dm/messages', { conversationId, content: 'reply', replyToId: elsewhere });
    expect(reply.status).toBe(400);
    expect(reply.body).toEqual({ error: 'body.replyToId: no such message in this conversation' });
    expect((await h.call(bob, 'POST', '/v1/friends/block', { userId: alice.id })).status).toBeLessThan(300);
    expect((await postInSql(h.runtime.pool, conversationId, alice.id, 'blocked')).outcome).toBe('blocked');
    expect(await contents(conversationId)).toEqual([]);
    expect((await h.events('social.dm.created')).length).toBe(eventsBefore);
  });

  it('reaches only the participants who did not block the sender, in a group', async () => {
    const [alice, bob, carol] = [await h.addUser(), await h.addUser(), await h.addUser()];
    const group = await conversationOf(alice, bob, carol);
    expect((await h.call(carol, 'POST', '/v1/friends/block', { userId: alice.id })).status).toBeLessThan(300);
    const posted = await postInSql(h.runtime.pool, group, alice.id, 'to the group');
    expect(posted.outcome).toBe('posted');
    expect(posted.audience_ids).toEqual([alice.id, bob.id].sort());
    expect(posted.sender_name).toBe(alice.displayName);
  });
});
