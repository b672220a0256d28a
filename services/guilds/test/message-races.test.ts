import { MAX_REACTIONS_PER_MESSAGE } from '@chat/messaging';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { messageReactions } from '../src/db/reactions.ts';
import { newId, startGuilds, until } from './harness.ts';

/**
 * Channel messages against writes of other transactions that land between a check and the write it
 * allows: what is answered and stored is what the request gets once the other write is done.
 */
const g = await startGuilds();
afterAll(() => g.close());

const owner = newId();
const member = newId();
let serverId: string;

const newChannel = async (name: string) =>
  (await g.call(owner, 'POST', `/v1/servers/${serverId}/channels`, { name, channelType: 'text' })).body.id as string;
const post = (userId: string, channelId: string, content: string, headers: Record<string, string> = {}) =>
  g.call(userId, 'POST', `/v1/channels/${channelId}/messages`, { content }, headers);
const someoneWaitsForALock = async () =>
  (await g.db.query("SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'")).rowCount! > 0;

beforeAll(async () => {
  serverId = (await g.call(owner, 'POST', '/v1/servers', { name: 'Message races', isPublic: true })).body.id;
  expect((await g.call(member, 'POST', `/v1/servers/${serverId}/join`)).status).toBe(200);
});

/** Runs `fn` with a client in a transaction of its own, which `fn` commits; rolled back if it does not. */
async function inTransaction<T>(fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await g.db.connect();
  try {
    await client.query('BEGIN');
    return await fn(client);
  } finally {
    await client.query('ROLLBACK').catch(() => {});
    client.release();
  }
}

describe('a post racing its channel’s deletion', () => {
  it('answers 404 to a post under an Idempotency-Key whose channel goes between its checks and its insert, and keeps no key', async () => {
    const channelId = await newChannel('doomed');
    expect((await post(member, channelId, 'before')).status).toBe(201);
    const key = `race-${newId()}`;

    const res = await inTransaction(async (deleting) => {
      await deleting.query('DELETE FROM channels WHERE id = $1', [channelId]);
      // The post passes its checks on the committed rows, then its insert waits on the channel row.
      const answer = post(member, channelId, 'too late', { 'idempotency-key': key });
      await until(someoneWaitsForALock);
      await deleting.query('COMMIT');
      return answer;
    });

    expect({ status: res.status, body: res.body }).toEqual({ status: 404, body: { error: 'Channel not found' } });
    expect((await g.db.query('SELECT count(*)::int AS n FROM messages WHERE channel_id = $1', [channelId])).rows[0].n).toBe(0);
    expect((await g.db.query('SELECT count(*)::int AS n FROM idempotency_keys WHERE key = $1', [key])).rows[0].n).toBe(0);
    expect((await g.outbox('guilds.message.created')).filter((e) => e.data.content === 'too late')).toEqual([]);
  });
});

describe('reactions racing their removal', () => {
  it(`keeps to ${MAX_REACTIONS_PER_MESSAGE} distinct emoji when the last reaction of one goes while it is added again and a new one comes`, async () => {
    const channelId = await newChannel('feelings');
    const messageId = (await post(owner, channelId, 'react')).body.id as string;
    const emoji = (i: number) => `emoji_${i}:${1000 + i}`;
    for (let i = 0; i < MAX_REACTIONS_PER_MESSAGE; i++) {
      const res = await g.call(owner, 'PUT', `/v1/channels/${channelId}/messages/${messageId}/reactions/${emoji(i)}/@me`);
      expect(res.status).toBe(204);
    }

    const newcomer = await inTransaction((removing) =>
      inTransaction((readding) =>
        inTransaction(async (adding) => {
          // The owner takes back the last emoji_0 while the member puts emoji_0 on again, and before either commits...
          await removing.query('DELETE FROM message_reactions WHERE message_id = $1 AND emoji = $2', [messageId, emoji(0)]);
          await messageReactions.add(readding, messageId, emoji(0), member);
          await removing.query('COMMIT');
          // ...a new emoji comes: it must count emoji_0, which the member's add keeps on the message.
          let settled = false;
          const outcome = messageReactions.add(adding, messageId, 'new_one:2000', newId()).then(
            () => 'added',
            (err: Error) => err.message,
          );
          void outcome.finally(() => {
            settled = true;
          });
          await until(async () => settled || (await someoneWaitsForALock()));
          await readding.query('COMMIT');
          const answer = await outcome;
          await adding.query('COMMIT');
          return answer;
        }),
      ),
    );

    expect(newcomer).toBe(`Maximum number of reactions reached (${MAX_REACTIONS_PER_MESSAGE})`);
    const stored = await g.db.query('SELECT emoji, user_id FROM message_reactions WHERE message_id = $1', [messageId]);
    expect(new Set(stored.rows.map((r) => r.emoji)).size).toBe(MAX_REACTIONS_PER_MESSAGE);
    expect(stored.rows.filter((r) => r.emoji === emoji(0))).toEqual([{ emoji: emoji(0), user_id: member }]);
  });
});
