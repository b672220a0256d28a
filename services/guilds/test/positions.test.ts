import { Permission, toMask } from '@chat/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId, startGuilds, until } from './harness.ts';

const g = await startGuilds();
afterAll(() => g.close());

type Row = { id: string; name: string; category_id: string | null; position: number };
const owner = newId();
const member = newId();

const newServer = async (name: string) => {
  const server = (await g.call(owner, 'POST', '/v1/servers', { name, isPublic: true })).body as { id: string };
  expect((await g.call(member, 'POST', `/v1/servers/${server.id}/join`)).status).toBe(200);
  return server;
};
const createChannel = async (serverId: string, name: string, categoryId: string | null = null) => {
  const res = await g.call(owner, 'POST', `/v1/servers/${serverId}/channels`, { name, channelType: 'text', categoryId });
  expect(res.status).toBe(201);
  return res.body as { id: string; position: number };
};
const createCategory = async (serverId: string, name: string) =>
  (await g.call(owner, 'POST', `/v1/servers/${serverId}/categories`, { name })).body as { id: string; position: number };

/** The channel names of one category (null: uncategorised) in position order, with their positions. */
async function group(serverId: string, categoryId: string | null): Promise<Row[]> {
  const { rows } = await g.db.query<Row>(
    'SELECT id, name, category_id, position FROM channels WHERE server_id = $1 AND category_id IS NOT DISTINCT FROM $2 ORDER BY position, id',
    [serverId, categoryId],
  );
  return rows;
}
const names = async (serverId: string, categoryId: string | null) => (await group(serverId, categoryId)).map((r) => r.name);

/** Every group of the server, channels and categories, is numbered 0..n-1. */
async function expectCompact(serverId: string): Promise<void> {
  const { rows } = await g.db.query<{ category_id: string | null; positions: number[] }>(
    'SELECT category_id, array_agg(position ORDER BY position) AS positions FROM channels WHERE server_id = $1 GROUP BY category_id',
    [serverId],
  );
  for (const r of rows) expect(r.positions, `category ${r.category_id}`).toEqual(r.positions.map((_, i) => i));
  const categories = await g.db.query<{ position: number }>('SELECT position FROM categories WHERE server_id = $1 ORDER BY position', [
    serverId,
  ]);
  expect(categories.rows.map((r) => r.position)).toEqual(categories.rows.map((_, i) => i));
}

describe('channel positions', () => {
  let server: { id: string };
  beforeAll(async () => {
    server = await newServer('Positions');
    for (const name of ['a', 'b', 'c', 'd']) await createChannel(server.id, name);
  });

  it('creates a channel last in its category', async () => {
    expect(await names(server.id, null)).toEqual(['a', 'b', 'c', 'd']);
    await expectCompact(server.id);
  });

  it('moves a channel among its siblings with PATCH position, renumbering them, with an event for each that moved', async () => {
    const [, b, , d] = await group(server.id, null);
    await g.db.query('DELETE FROM outbox');
    const res = await g.call(owner, 'PATCH', `/v1/channels/${d!.id}`, { position: 1 });
    expect(res.status).toBe(200);
    expect(res.body.position).toBe(1);
    expect(await names(server.id, null)).toEqual(['a', 'd', 'b', 'c']);
    await expectCompact(server.id);
    const updated = (await g.outbox('guilds.channel.updated')).map((e) => [e.data.name, e.data.position]);
    expect(updated).toEqual(
      expect.arrayContaining([
        ['d', 1],
        ['b', 2],
        ['c', 3],
      ]),
    );
    expect(updated).toHaveLength(3);

    expect((await g.call(owner, 'PATCH', `/v1/channels/${b!.id}`, { position: 99 })).body.position).toBe(3);
    expect(await names(server.id, null)).toEqual(['a', 'd', 'c', 'b']);
    expect((await g.call(owner, 'PATCH', `/v1/channels/${b!.id}`, { position: 0 })).body.position).toBe(0);
    expect(await names(server.id, null)).toEqual(['b', 'a', 'd', 'c']);
  });

  it('refuses a move without MANAGE_CHANNELS or with a negative position, changing nothing', async () => {
    const before = await group(server.id, null);
    expect((await g.call(member, 'PATCH', `/v1/channels/${before[0]!.id}`, { position: 2 })).status).toBe(403);
    expect((await g.call(owner, 'PATCH', `/v1/channels/${before[0]!.id}`, { position: -1 })).status).toBe(400);
    expect(await group(server.id, null)).toEqual(before);
  });

  it('moves a channel to another category, closing the gap it leaves', async () => {
    const category = await createCategory(server.id, 'Moved');
    const x = await createChannel(server.id, 'x', category.id);
    const [first] = await group(server.id, null);
    const res = await g.call(owner, 'PATCH', `/v1/channels/${first!.id}`, { categoryId: category.id, position: 0 });
    expect(res.body).toMatchObject({ categoryId: category.id, position: 0 });
    expect(await names(server.id, category.id)).toEqual([first!.name, 'x']);
    expect(await names(server.id, null)).toEqual(['a', 'd', 'c']);
    await g.call(owner, 'PATCH', `/v1/channels/${x.id}`, { categoryId: null });
    expect(await names(server.id, null)).toEqual(['a', 'd', 'c', 'x']);
    await expectCompact(server.id);
  });

  it('deleting a channel renumbers its siblings', async () => {
    const [, second] = await group(server.id, null);
    expect((await g.call(owner, 'DELETE', `/v1/channels/${second!.id}`)).status).toBe(204);
    expect(await names(server.id, null)).toEqual(['a', 'c', 'x']);
    await expectCompact(server.id);
  });

  it('deleting a category puts its channels after the uncategorised ones and renumbers the categories', async () => {
    const doomed = await createCategory(server.id, 'Doomed');
    await createCategory(server.id, 'After');
    await createChannel(server.id, 'p', doomed.id);
    await createChannel(server.id, 'q', doomed.id);
    expect((await g.call(owner, 'DELETE', `/v1/servers/${server.id}/categories/${doomed.id}`)).status).toBe(204);
    expect(await names(server.id, null)).toEqual(['a', 'c', 'x', 'p', 'q']);
    await expectCompact(server.id);
  });
});

describe('PATCH servers/{id}/channels/positions', () => {
  let server: { id: string };
  let category: { id: string };
  beforeAll(async () => {
    server = await newServer('Reorder');
    category = await createCategory(server.id, 'Rooms');
    for (const name of ['r1', 'r2', 'r3']) await createChannel(server.id, name, category.id);
  });

  it('reorders a whole category at once and answers its channels', async () => {
    const ids = (await group(server.id, category.id)).map((r) => r.id);
    const wanted = [ids[2], ids[0], ids[1]];
    const res = await g.call(owner, 'PATCH', `/v1/servers/${server.id}/channels/positions`, {
      channelIds: wanted,
      categoryId: category.id,
    });
    expect(res.status).toBe(200);
    expect(res.body.map((c: { id: string; position: number }) => [c.id, c.position])).toEqual(wanted.map((id, i) => [id, i]));
    expect(await names(server.id, category.id)).toEqual(['r3', 'r1', 'r2']);
  });

  it('takes exactly the category’s set of ids; anything else is 400 and changes nothing', async () => {
    const before = await group(server.id, category.id);
    const ids = before.map((r) => r.id);
    const uncategorised = await createChannel(server.id, 'loose');
    for (const channelIds of [ids.slice(1), [...ids, newId()], [ids[0], ids[0], ids[1]], [...ids.slice(1), uncategorised.id], []]) {
      const res = await g.call(owner, 'PATCH', `/v1/servers/${server.id}/channels/positions`, { channelIds, categoryId: category.id });
      expect(res.status, JSON.stringify(channelIds)).toBe(400);
      expect(res.body).toEqual({ error: expect.any(String) });
    }
    const foreignCategory = await g.call(owner, 'PATCH', `/v1/servers/${server.id}/channels/positions`, {
      channelIds: ids,
      categoryId: newId(),
    });
    expect(foreignCategory.status).toBe(400);
    expect(
      (await g.call(member, 'PATCH', `/v1/servers/${server.id}/channels/positions`, { channelIds: ids, categoryId: category.id })).status,
    ).toBe(403);
    expect(await group(server.id, category.id)).toEqual(before);
    const loose = await g.call(owner, 'PATCH', `/v1/servers/${server.id}/channels/positions`, { channelIds: [uncategorised.id] });
    expect(loose.status).toBe(200);
  });
});

describe('PATCH servers/{id}/channels/positions with a channel override', () => {
  it('answers 403 naming a channel it would move where an override denies MANAGE_CHANNELS, changing nothing', async () => {
    const server = await newServer('Reorder overrides');
    const category = await createCategory(server.id, 'Guarded');
    const [x, y, z] = [
      await createChannel(server.id, 'x', category.id),
      await createChannel(server.id, 'y', category.id),
      await createChannel(server.id, 'z', category.id),
    ];
    const mods = await g.call(owner, 'POST', `/v1/servers/${server.id}/roles`, {
      name: 'mods',
      permissions: toMask(Permission.MANAGE_CHANNELS),
    });
    expect((await g.call(owner, 'PUT', `/v1/servers/${server.id}/members/${member}/roles/${mods.body.id}`)).status).toBe(204);
    const deny = { roleId: mods.body.id, allowBits: 0, denyBits: toMask(Permission.MANAGE_CHANNELS) };
    expect((await g.call(owner, 'PUT', `/v1/channels/${x.id}/permissions`, deny)).status).toBe(200);
    const before = await group(server.id, category.id);
    const events = (await g.outbox('guilds.channel.updated')).length;

    const reorder = (channelIds: string[]) =>
      g.call(member, 'PATCH', `/v1/servers/${server.id}/channels/positions`, { channelIds, categoryId: category.id });
    const res = await reorder([y.id, x.id, z.id]);
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ error: `Missing permission MANAGE_CHANNELS in channel ${x.id}` });
    expect(await group(server.id, category.id)).toEqual(before);
    expect(await g.outbox('guilds.channel.updated')).toHaveLength(events);

    // The channel it may not manage stays where it is: the others may still swap around it.
    const around = await reorder([x.id, z.id, y.id]);
    expect(around.status).toBe(200);
    expect(await names(server.id, category.id)).toEqual(['x', 'z', 'y']);
  });
});

describe('concurrent layout changes', () => {
  it('keeps every group at 0..n-1 when moves, creates, deletes and reorders run at once', async () => {
    const server = await newServer('Concurrent');
    const general = (await g.db.query('SELECT id FROM categories WHERE server_id = $1', [server.id])).rows[0] as { id: string };
    const categories = [await createCategory(server.id, 'One'), await createCategory(server.id, 'Two')];
    const doomed = await createChannel(server.id, 'doomed', categories[0]!.id);
    const channels: { id: string }[] = [];
    for (let i = 0; i < 8; i++) channels.push(await createChannel(server.id, `c${i}`, categories[i % 2]!.id));
    const ops: Promise<{ status: number }>[] = [];
    for (let i = 0; i < 8; i++) {
      const target = categories[(i + 1) % 2]!.id;
      ops.push(g.call(owner, 'PATCH', `/v1/channels/${channels[i]!.id}`, { position: (i * 3) % 4 }));
      ops.push(g.call(owner, 'PATCH', `/v1/channels/${channels[(i + 3) % 8]!.id}`, { categoryId: target, position: i % 3 }));
    }
    ops.push(
      g.call(owner, 'POST', `/v1/servers/${server.id}/channels`, { name: 'late', channelType: 'text', categoryId: categories[0]!.id }),
    );
    ops.push(g.call(owner, 'DELETE', `/v1/channels/${doomed.id}`));
    const categoryIds = [categories[1]!.id, general.id, categories[0]!.id];
    ops.push(g.call(owner, 'PATCH', `/v1/servers/${server.id}/categories/positions`, { categoryIds }));
    const results = await Promise.all(ops);
    const failures = results.map((r, i) => [i, r.status]).filter(([, status]) => status !== 200 && status !== 201 && status !== 204);
    expect(failures).toEqual([]);
    await expectCompact(server.id);
    const { rows } = await g.db.query('SELECT count(*)::int AS n FROM channels WHERE server_id = $1', [server.id]);
    expect(rows[0].n).toBe(2 + 8 + 1);
  });
});

/**
 * Every channel write bumps the server row (the access-version trigger), so a path that wrote a
 * channel before taking the layout lock, or one that held the server row while it still had
 * siblings to shift, waited in a cycle: PostgreSQL's deadlock, retried until the request gave up
 * with a 500. These run such changes at once, several rounds, and want no 5xx.
 */
describe('concurrent renames, moves and deletes', () => {
  const answersOf = (results: { status: number; body: unknown }[]) =>
    results.filter((r) => r.status >= 500).map((r) => `${r.status} ${JSON.stringify(r.body)}`);

  it('answers 200 to six renames-with-move among the channels of one category at once', async () => {
    const server = await newServer('Renames with moves');
    const category = await createCategory(server.id, 'Busy');
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) ids.push((await createChannel(server.id, `d${i}`, category.id)).id);
    for (let round = 0; round < 4; round++) {
      const results = await Promise.all(
        ids.map((id, i) => g.call(owner, 'PATCH', `/v1/channels/${id}`, { name: `r${round}-${i}`, position: 5 - i })),
      );
      expect(results.map((r) => r.status)).toEqual(ids.map(() => 200));
      expect((await names(server.id, category.id)).sort()).toEqual(ids.map((_, i) => `r${round}-${i}`).sort());
      await expectCompact(server.id);
    }
  });

  it('answers no 5xx to renames with moves across categories, deletes and reorders at once', async () => {
    const server = await newServer('Mixed layout');
    for (let round = 0; round < 3; round++) {
      const categories = [
        await createCategory(server.id, `A${round}`),
        await createCategory(server.id, `B${round}`),
        await createCategory(server.id, `C${round}`),
      ];
      const ids: string[] = [];
      for (let i = 0; i < 9; i++) ids.push((await createChannel(server.id, `m${round}-${i}`, categories[i % 3]!.id)).id);
      const inFirst = (await group(server.id, categories[0]!.id)).map((r) => r.id).reverse();
      const results = await Promise.all([
        ...ids.map((id, i) =>
          g.call(owner, 'PATCH', `/v1/channels/${id}`, {
            name: `n${round}-${i}`,
            categoryId: categories[(i + 1) % 3]!.id,
            position: i % 2,
          }),
        ),
        g.call(owner, 'DELETE', `/v1/servers/${server.id}/categories/${categories[2]!.id}`),
        g.call(owner, 'DELETE', `/v1/channels/${ids[4]}`),
        g.call(owner, 'PATCH', `/v1/servers/${server.id}/channels/positions`, { channelIds: inFirst, categoryId: categories[0]!.id }),
        ...ids.map((id, i) => g.call(owner, 'PATCH', `/v1/channels/${id}`, { topic: `plain ${round}-${i}` })),
      ]);
      expect(answersOf(results)).toEqual([]);
      await expectCompact(server.id);
    }
  });

  it('answers 200 to plain renames racing moves and deletes of their siblings', async () => {
    const server = await newServer('Renames among moves');
    for (let round = 0; round < 4; round++) {
      const category = await createCategory(server.id, `R${round}`);
      const ids: string[] = [];
      for (let i = 0; i < 8; i++) ids.push((await createChannel(server.id, `p${round}-${i}`, category.id)).id);
      const [doomed, ...kept] = ids;
      const results = await Promise.all([
        g.call(owner, 'DELETE', `/v1/channels/${doomed}`),
        ...kept.map((id, i) =>
          i % 2
            ? g.call(owner, 'PATCH', `/v1/channels/${id}`, { name: `plain-${round}-${i}` })
            : g.call(owner, 'PATCH', `/v1/channels/${id}`, { name: `moved-${round}-${i}`, position: 0 }),
        ),
      ]);
      expect(results.map((r) => r.status)).toEqual([204, ...kept.map(() => 200)]);
      await expectCompact(server.id);
    }
  });
});

/**
 * The same cycle, step by step: a plain rename has locked its channel's row and is about to update
 * the server row (its write's access-version trigger) when a layout change of that channel's group
 * starts. The layout change must queue for the row without holding the server row (NOWAIT fails
 * when it does), and answer once the rename commits.
 */
describe('a layout change queued behind a sibling being renamed', () => {
  const cases = [
    ['a rename with a move', (id: string) => g.call(owner, 'PATCH', `/v1/channels/${id}`, { name: 'moved', position: 2 }), 200],
    ['a delete', (id: string) => g.call(owner, 'DELETE', `/v1/channels/${id}`), 204],
  ] as const;

  it.each(cases)('%s holds no server row while it waits, so the rename completes', async (_, change, status) => {
    const server = await newServer('Queued');
    const category = await createCategory(server.id, 'Q');
    const [changed, renamed] = [
      await createChannel(server.id, 'changed', category.id),
      await createChannel(server.id, 'renamed', category.id),
    ];
    await createChannel(server.id, 'third', category.id);
    const rename = await g.db.connect();
    try {
      await rename.query('BEGIN');
      await rename.query('SELECT 1 FROM channels WHERE id = $1 FOR NO KEY UPDATE', [renamed.id]);
      const answer = change(changed.id);
      await until(
        async () =>
          (await g.db.query("SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'")).rowCount! >
          0,
      );
      await rename.query('SELECT 1 FROM servers WHERE id = $1 FOR NO KEY UPDATE NOWAIT', [server.id]);
      await rename.query("UPDATE channels SET name = 'renamed-now' WHERE id = $1", [renamed.id]);
      await rename.query('COMMIT');
      expect((await answer).status).toBe(status);
    } finally {
      await rename.query('ROLLBACK').catch(() => undefined);
      rename.release();
    }
    expect(await names(server.id, category.id)).toContain('renamed-now');
    await expectCompact(server.id);
  });
});
