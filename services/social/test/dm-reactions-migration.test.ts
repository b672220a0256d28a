import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { createHarness, startPresenceStandIn } from './harness.ts';

/**
 * Migration 0015 brings direct-message reactions written before the shared Emoji schema lower-cased
 * custom emoji to the one spelling: its statements run again here over rows as the older code let
 * them be written.
 */

const h = await createHarness();
afterAll(() => h.close());
await startPresenceStandIn(h.runtime);

const migration = readFileSync(new URL('../migrations/0015_canonical_dm_reactions.sql', import.meta.url), 'utf8');

describe('migration 0015', () => {
  it('writes custom emoji reactions in lower case, one per user and emoji, the earliest kept; others untouched', async () => {
    const [alice, bob] = [await h.addUser(), await h.addUser()];
    const opened = await h.call(alice, 'POST', '/v1/dm/conversations', { userIds: [bob.id] });
    const sent = await h.call(alice, 'POST', '/v1/dm/messages', { conversationId: opened.body.id, content: 'react' });
    expect(sent.status).toBe(201);
    const emojiId = randomUUID();
    await h.runtime.pool.query(
      `INSERT INTO dm_reactions (message_id, emoji, user_id, created_at) VALUES
         ($1, $2, $4, now() - interval '2 minutes'), ($1, $3, $4, now() - interval '1 minute'), ($1, $3, $5, now()),
         ($1, '👍', $5, now() + interval '1 minute')`,
      [sent.body.id, `PARTY:${emojiId.toUpperCase()}`, `party:${emojiId}`, alice.id, bob.id],
    );

    await h.runtime.pool.query(migration);

    const reactions = await h.runtime.pool.query('SELECT emoji, user_id FROM dm_reactions WHERE message_id = $1 ORDER BY created_at', [
      sent.body.id,
    ]);
    expect(reactions.rows).toEqual([
      { emoji: `party:${emojiId}`, user_id: alice.id },
      { emoji: `party:${emojiId}`, user_id: bob.id },
      { emoji: '👍', user_id: bob.id },
    ]);
  });
});
