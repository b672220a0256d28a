import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { newId, startGuilds } from './harness.ts';

/**
 * Migration 0217 brings rows written before the contracts canonicalised text to the one spelling:
 * its statements run again here over rows written as the older code let them be.
 */

const g = await startGuilds();
afterAll(() => g.close());

const migration = readFileSync(new URL('../migrations/0217_canonical_text.sql', import.meta.url), 'utf8');

describe('migration 0217', () => {
  it('writes names, descriptions and tags in NFC, each tag and DJ role once, and custom emoji reactions in lower case', async () => {
    const owner = newId();
    const created = await g.call(owner, 'POST', '/v1/servers', { name: 'Old', isPublic: true });
    const serverId = created.body.id as string;
    const channel = await g.newChannel(owner, serverId, 'general');
    const message = await g.call(owner, 'POST', `/v1/channels/${channel.id}/messages`, { content: 'react' });
    const role = (await g.call(owner, 'POST', `/v1/servers/${serverId}/roles`, { name: 'dj' })).body.id as string;
    const [emojiId, other] = [randomUUID(), newId()];
    await g.db.query(`UPDATE servers SET name = $2, description = $3, tags = $4, dj_role_ids = $5 WHERE id = $1`, [
      serverId,
      'Cafe\u0301',
      'Re\u0301sume\u0301',
      ['Cafe\u0301', 'caf\u00e9', 'CAF\u00c9', 'tea'],
      [role, role],
    ]);
    await g.db.query(
      `INSERT INTO message_reactions (message_id, emoji, user_id, created_at) VALUES
         ($1, $2, $4, now() - interval '2 minutes'), ($1, $3, $4, now() - interval '1 minute'), ($1, $3, $5, now())`,
      [message.body.id, `PARTY:${emojiId.toUpperCase()}`, `party:${emojiId}`, owner, other],
    );

    await g.db.query(migration);

    expect((await g.db.query('SELECT name, description, tags, dj_role_ids FROM servers WHERE id = $1', [serverId])).rows).toEqual([
      { name: 'Caf\u00e9', description: 'R\u00e9sum\u00e9', tags: ['Caf\u00e9', 'tea'], dj_role_ids: [role] },
    ]);
    const reactions = await g.db.query('SELECT emoji, user_id FROM message_reactions WHERE message_id = $1 ORDER BY created_at', [
      message.body.id,
    ]);
    expect(reactions.rows).toEqual([
      { emoji: `party:${emojiId}`, user_id: owner },
      { emoji: `party:${emojiId}`, user_id: other },
    ]);
  });
});
