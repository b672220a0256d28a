import { RolesPageRpc, STREAMS } from '@chat/contracts';
import { serveRpc } from '@chat/kit';
import { v7 as uuidv7 } from 'uuid';
import { describe, expect, it } from 'vitest';
import { READ_STATE_CONSUMERS } from '../src/bus/read-states.ts';
import { eventually } from './harness.ts';
import { readStatesHarness } from './read-state-fixtures.ts';

/**
 * Social's read-model of role names (for the excerpts of edited messages) started after GUILDS
 * dropped role events it never read: the kit's backfill asks guilds for every role's name
 * (rpc.guilds.roles.page, answered here from what the test says guilds holds; guilds' own answer is
 * tested in services/guilds/test/bus.test.ts), and the events after it win.
 */
const { h, rs } = await readStatesHarness();
const serverId = uuidv7();
const guilds = { roles: [] as { id: string; name: string }[], asked: 0 };
serveRpc(h.runtime.bus, h.runtime.log, RolesPageRpc, async ({ after, limit }) => {
  guilds.asked += 1;
  const roles = [...guilds.roles].sort((a, b) => a.id.localeCompare(b.id)).filter((r) => after === undefined || r.id > after);
  return { roles: roles.slice(0, limit) };
});
await h.runtime.bus.nc.flush();

const role = (id: string, name: string) => ({
  ...{ id, serverId, name, color: 0, permissions: 0, position: 1, hoist: false, mentionable: true },
  createdAt: new Date().toISOString(),
});
const namesOf = async (ids: string[]) =>
  Object.fromEntries(
    (await h.runtime.pool.query('SELECT id::text, name FROM role_names WHERE id = ANY($1::uuid[])', [ids])).rows.map((r) => [r.id, r.name]),
  );

describe("social's role names, started after GUILDS dropped the role events", () => {
  it('are read from guilds first, then follow the events published after, even ones older than the backfill', async () => {
    const { durable } = READ_STATE_CONSUMERS.roles;
    await rs.stop('roles');
    await h.runtime.bus.jsm.consumers.delete(h.runtime.bus.name(STREAMS.guilds.name), h.runtime.bus.name(durable));
    const [raid, gone, crew] = [uuidv7(), uuidv7(), uuidv7()];
    // The history the stream no longer holds: raid created and renamed, gone created and deleted, crew created.
    await rs.publish('guilds.role.created', role(raid, 'raid'));
    await rs.publish('guilds.role.updated', role(raid, 'raiders'));
    await rs.publish('guilds.role.created', role(gone, 'gone'));
    await rs.publish('guilds.role.deleted', { id: gone, serverId });
    await rs.publish('guilds.role.created', role(crew, 'crew'));
    await h.runtime.bus.jsm.streams.purge(h.runtime.bus.name(STREAMS.guilds.name));
    guilds.roles = [
      { id: raid, name: 'raiders' },
      { id: crew, name: 'crew' },
    ];

    await rs.start('roles');
    await eventually(async () => Object.keys(await namesOf([raid, crew])).length === 2);
    expect(await namesOf([raid, gone, crew])).toEqual({ [raid]: 'raiders', [crew]: 'crew' });
    expect(guilds.asked).toBeGreaterThanOrEqual(1);

    // A rename committed before the backfill read its page, published after it (the outbox's lag): it wins.
    const before = new Date(Date.now() - 60_000).toISOString();
    await rs.publish('guilds.role.updated', role(crew, 'crew two'), before);
    await rs.publish('guilds.role.deleted', { id: raid, serverId });
    await eventually(async () => (await namesOf([crew]))[crew] === 'crew two');
    await eventually(async () => (await namesOf([raid]))[raid] === undefined);
  });
});
