import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId, startGuilds, until } from './harness.ts';

/**
 * A write that refers to a row (a reaction to its message, a member's role to the member, a
 * channel to its category) while another transaction deletes that row answers what the same
 * request answers after the delete, never a 500 from the foreign key. A deletion racing another
 * deletion of the same row, or the joins of its server, answers and publishes as if they had come
 * one after the other.
 */
const g = await startGuilds();
afterAll(() => g.close());

const owner = newId();
const member = newId();
let serverId: string;
let channelId: string;

beforeAll(async () => {
  serverId = (await g.call(owner, 'POST', '/v1/servers', { name: 'Races', isPublic: true })).body.id;
  expect((await g.call(member, 'POST', `/v1/servers/${serverId}/join`)).status).toBe(200);
  channelId = (await g.call(owner, 'POST', `/v1/servers/${serverId}/channels`, { name: 'talk', channelType: 'text' })).body.id;
});

type Query = (sql: string, params: unknown[]) => Promise<unknown>;

/** How many of this database's sessions wait for a lock. */
async function lockWaiters(): Promise<number> {
  const { rows } = await g.db.query(
    "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
  );
  return rows[0].n;
}

/**
 * Holds `lock` in a transaction left open, starts the requests one after the other (each once the
 * one before waits for a lock, so they queue in that order), commits, and answers their answers.
 */
async function queuedBehind<T>(lock: (q: Query) => Promise<unknown>, requests: (() => Promise<T>)[]): Promise<T[]> {
  const other = await g.db.connect();
  try {
    await other.query('BEGIN');
    await lock((sql, params) => other.query(sql, params));
    const answers: Promise<T>[] = [];
    for (const request of requests) {
      answers.push(request());
      await until(async () => (await lockWaiters()) >= answers.length);
    }
    await other.query('COMMIT');
    return await Promise.all(answers);
  } finally {
    other.release();
  }
}

const lockServerRow = (id: string) => (q: Query) => q('SELECT 1 FROM servers WHERE id = $1 FOR UPDATE', [id]);

/**
 * Runs `change` in a transaction left open, starts `request`, waits until it waits for a lock,
 * commits, and answers what the request answered.
 */
async function whileUncommitted<T>(change: (q: Query) => Promise<void>, request: () => Promise<T>): Promise<T> {
  const [answer] = await queuedBehind(change, [request]);
  return answer as T;
}

describe('writes racing a delete', () => {
  it('answers 404 to a reaction on a message deleted meanwhile, and stores no reaction', async () => {
    const message = (await g.call(owner, 'POST', `/v1/channels/${channelId}/messages`, { content: 'soon gone' })).body;
    const added = (await g.outbox('guilds.reaction.added')).length;

    const res = await whileUncommitted(
      (q) => q('DELETE FROM messages WHERE id = $1', [message.id]).then(() => undefined),
      () => g.call(member, 'PUT', `/v1/channels/${channelId}/messages/${message.id}/reactions/${encodeURIComponent('👍')}/@me`),
    );

    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: 'Message not found' });
    expect((await g.db.query('SELECT count(*)::int AS n FROM message_reactions WHERE message_id = $1', [message.id])).rows[0].n).toBe(0);
    expect(await g.outbox('guilds.reaction.added')).toHaveLength(added);
  });

  it('answers 404 to pinning a message deleted meanwhile: no pin, no pin event, no "pinned" system message', async () => {
    const message = (await g.call(owner, 'POST', `/v1/channels/${channelId}/messages`, { content: 'pin me, then gone' })).body;
    const pinsAdded = (await g.outbox('guilds.pin.added')).length;

    const res = await whileUncommitted(
      (q) => q('DELETE FROM messages WHERE id = $1', [message.id]).then(() => undefined),
      () => g.call(owner, 'PUT', `/v1/channels/${channelId}/pins/${message.id}`),
    );

    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: 'Message not found' });
    expect(await g.outbox('guilds.pin.added')).toHaveLength(pinsAdded);
    const pinnedNotices = await g.db.query("SELECT count(*)::int AS n FROM messages WHERE channel_id = $1 AND type = 'pinned'", [
      channelId,
    ]);
    expect(pinnedNotices.rows[0].n).toBe(0);
  });

  it('answers 404 to giving a role to a member kicked meanwhile, and gives nothing', async () => {
    const kicked = newId();
    expect((await g.call(kicked, 'POST', `/v1/servers/${serverId}/join`)).status).toBe(200);
    const role = (await g.call(owner, 'POST', `/v1/servers/${serverId}/roles`, { name: 'helpers' })).body;
    const updated = (await g.outbox('guilds.member.updated')).length;

    // As a kick does: the server row, then the member.
    const res = await whileUncommitted(
      async (q) => {
        await q('SELECT 1 FROM servers WHERE id = $1 FOR UPDATE', [serverId]);
        await q('DELETE FROM members WHERE server_id = $1 AND user_id = $2', [serverId, kicked]);
      },
      () => g.call(owner, 'PUT', `/v1/servers/${serverId}/members/${kicked}/roles/${role.id}`),
    );

    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: 'Member not found' });
    expect((await g.db.query('SELECT count(*)::int AS n FROM member_roles WHERE role_id = $1', [role.id])).rows[0].n).toBe(0);
    expect(await g.outbox('guilds.member.updated')).toHaveLength(updated);
  });

  it('answers 404 to renaming a member kicked meanwhile, with no nickname and no member event', async () => {
    const kicked = newId();
    expect((await g.call(kicked, 'POST', `/v1/servers/${serverId}/join`)).status).toBe(200);
    const updated = (await g.outbox('guilds.member.updated')).length;

    // As a kick does: the server row, then the member.
    const res = await whileUncommitted(
      async (q) => {
        await q('SELECT 1 FROM servers WHERE id = $1 FOR UPDATE', [serverId]);
        await q('DELETE FROM members WHERE server_id = $1 AND user_id = $2', [serverId, kicked]);
      },
      () => g.call(owner, 'PATCH', `/v1/servers/${serverId}/members/${kicked}`, { nickname: 'too late' }),
    );

    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: 'Member not found' });
    expect((await g.db.query('SELECT 1 FROM members WHERE server_id = $1 AND user_id = $2', [serverId, kicked])).rowCount).toBe(0);
    expect(await g.outbox('guilds.member.updated')).toHaveLength(updated);
  });

  it("answers 404 to a member's own rename racing the server's deletion, with no member event", async () => {
    const doomed = (await g.call(owner, 'POST', '/v1/servers', { name: 'Renamed away', isPublic: true })).body.id;
    expect((await g.call(member, 'POST', `/v1/servers/${doomed}/join`)).status).toBe(200);
    const updated = (await g.outbox('guilds.member.updated')).length;

    const res = await whileUncommitted(
      (q) => q('DELETE FROM servers WHERE id = $1', [doomed]).then(() => undefined),
      () => g.call(member, 'PATCH', `/v1/servers/${doomed}/members/@me`, { nickname: 'gone with it' }),
    );

    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: 'Server not found' });
    expect((await g.db.query('SELECT 1 FROM members WHERE server_id = $1', [doomed])).rowCount).toBe(0);
    expect(await g.outbox('guilds.member.updated')).toHaveLength(updated);
  });

  it("answers 404 to a role change that the server's deletion deadlocks, rather than a 500: the role change runs again", async () => {
    const doomed = (await g.call(owner, 'POST', '/v1/servers', { name: 'Doomed', isPublic: true })).body.id;
    expect((await g.call(member, 'POST', `/v1/servers/${doomed}/join`)).status).toBe(200);
    const role = (await g.call(owner, 'POST', `/v1/servers/${doomed}/roles`, { name: 'mods' })).body;
    const other = await g.db.connect();
    try {
      // The deletion's order: the server row, then (its cascade) the roles. A role change takes the
      // roles first, then the server row; it waits first, so its deadlock check fires first and it
      // is the transaction PostgreSQL aborts.
      await other.query('BEGIN');
      await other.query('SELECT 1 FROM servers WHERE id = $1 FOR UPDATE', [doomed]);
      const answer = g.call(owner, 'PUT', `/v1/servers/${doomed}/members/${member}/roles/${role.id}`);
      await until(
        async () =>
          (await g.db.query("SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'")).rowCount! >
          0,
      );
      await other.query('DELETE FROM servers WHERE id = $1', [doomed]);
      await other.query('COMMIT');
      const res = await answer;
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: expect.stringMatching(/not found$/) });
    } finally {
      other.release();
    }
  });

  it('answers 400 to creating a channel in a category deleted meanwhile, and creates none', async () => {
    const category = (await g.call(owner, 'POST', `/v1/servers/${serverId}/categories`, { name: 'doomed' })).body;

    const res = await whileUncommitted(
      (q) => q('DELETE FROM categories WHERE id = $1', [category.id]).then(() => undefined),
      () => g.call(owner, 'POST', `/v1/servers/${serverId}/channels`, { name: 'late', channelType: 'text', categoryId: category.id }),
    );

    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: 'categoryId is not a category of this server' });
    expect((await g.db.query("SELECT count(*)::int AS n FROM channels WHERE server_id = $1 AND name = 'late'", [serverId])).rows[0].n).toBe(
      0,
    );
  });

  it('answers 400 to moving a channel into a category deleted meanwhile, and leaves it where it was', async () => {
    const category = (await g.call(owner, 'POST', `/v1/servers/${serverId}/categories`, { name: 'also doomed' })).body;
    const moving = (await g.call(owner, 'POST', `/v1/servers/${serverId}/channels`, { name: 'moving', channelType: 'text' })).body;

    const res = await whileUncommitted(
      (q) => q('DELETE FROM categories WHERE id = $1', [category.id]).then(() => undefined),
      () => g.call(owner, 'PATCH', `/v1/channels/${moving.id}`, { categoryId: category.id }),
    );

    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: 'categoryId is not a category of this server' });
    const [row] = (await g.db.query('SELECT category_id, position FROM channels WHERE id = $1', [moving.id])).rows;
    expect(row).toEqual({ category_id: null, position: moving.position });
  });
});

describe('deletions racing joins and each other', () => {
  it('lists in guilds.server.deleted the members whose join and invite committed while the deletion waited', async () => {
    const doomed = (await g.call(owner, 'POST', '/v1/servers', { name: 'Joined while deleted', isPublic: true })).body.id;
    const code = (await g.call(owner, 'POST', `/v1/servers/${doomed}/invites`, {})).body.code;
    const [byJoin, byInvite] = [newId(), newId()];

    // The joins come first and hold the server row until they commit; the deletion comes after them.
    const [join, accept, deletion] = await queuedBehind(lockServerRow(doomed), [
      () => g.call(byJoin, 'POST', `/v1/servers/${doomed}/join`),
      () => g.call(byInvite, 'POST', `/v1/invites/${code}/accept`),
      () => g.call(owner, 'DELETE', `/v1/servers/${doomed}`),
    ]);

    expect([join?.status, accept?.status, deletion?.status]).toEqual([200, 200, 204]);
    const deleted = (await g.outbox('guilds.server.deleted')).filter((e) => e.data.id === doomed);
    expect(deleted.map((e) => (e.data.memberIds as string[]).sort())).toEqual([[owner, byJoin, byInvite].sort()]);
    expect((await g.db.query('SELECT 1 FROM members WHERE server_id = $1', [doomed])).rowCount).toBe(0);
  });

  it('answers 404 to the second of two concurrent deletions of a server, which publishes nothing', async () => {
    const doomed = (await g.call(owner, 'POST', '/v1/servers', { name: 'Deleted twice', isPublic: true })).body.id;

    const answers = await queuedBehind(lockServerRow(doomed), [
      () => g.call(owner, 'DELETE', `/v1/servers/${doomed}`),
      () => g.call(owner, 'DELETE', `/v1/servers/${doomed}`),
    ]);

    expect(answers.map((a) => a.status)).toEqual([204, 404]);
    expect(answers[1]?.body).toEqual({ error: 'Server not found' });
    expect((await g.db.query('SELECT 1 FROM servers WHERE id = $1', [doomed])).rowCount).toBe(0);
    expect((await g.outbox('guilds.server.deleted')).filter((e) => e.data.id === doomed)).toHaveLength(1);
  });

  it('answers 404 to the second of two concurrent deletions of a channel, which publishes nothing', async () => {
    const doomed = (await g.call(owner, 'POST', `/v1/servers/${serverId}/channels`, { name: 'deleted twice', channelType: 'text' })).body;

    // The first deletion takes the layout lock and waits for the channel row; the second waits for the layout lock.
    const answers = await queuedBehind(
      (q) => q('SELECT 1 FROM channels WHERE id = $1 FOR UPDATE', [doomed.id]),
      [() => g.call(owner, 'DELETE', `/v1/channels/${doomed.id}`), () => g.call(owner, 'DELETE', `/v1/channels/${doomed.id}`)],
    );

    expect(answers.map((a) => a.status)).toEqual([204, 404]);
    expect(answers[1]?.body).toEqual({ error: 'Channel not found' });
    expect((await g.db.query('SELECT 1 FROM channels WHERE id = $1', [doomed.id])).rowCount).toBe(0);
    expect((await g.outbox('guilds.channel.deleted')).filter((e) => e.data.id === doomed.id)).toHaveLength(1);
  });
});
