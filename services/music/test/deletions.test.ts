import { GUILDS_SUBJECTS, type PlayerState } from '@chat/contracts';
import type { ConsumerHandle } from '@chat/kit';
import { until } from '@chat/testkit';
import { v7 as uuidv7 } from 'uuid';
import { afterAll, describe, expect, it } from 'vitest';
import { consumeGuildDeletions } from '../src/bus/guilds.ts';
import * as players from '../src/db/players.ts';
import { advanceDuePlayers } from '../src/domain/clock.ts';
import { assertChannelNotDeleted } from '../src/domain/deletions.ts';
import { startMusicTest } from './harness.ts';

// Guilds' deletions reach music as events on guilds' stream, published here as guilds' relay would.

const t = await startMusicTest();
let consumers: ConsumerHandle[] = await consumeGuildDeletions(t.runtime);
afterAll(async () => {
  await Promise.all(consumers.map((c) => c.stop()));
  await t.close();
});

const alice = uuidv7();
const clockDeps = { pool: t.runtime.pool, bus: t.runtime.bus };

async function send(method: 'POST' | 'PATCH', url: string, payload: Record<string, unknown>) {
  return t.app.inject({ method, url, headers: await t.auth(alice), payload });
}

/** A voice channel (of `serverId`, else a fresh server) whose looping one-second track plays, with one more queued. */
async function loopingPlayer(serverId = uuidv7()) {
  const channel = t.guilds.voiceChannelWith([alice], { serverId });
  const target = { channelId: channel.id, serverId };
  for (const name of ['a', 'b']) {
    const res = await send('POST', '/v1/music/play', { ...target, url: `https://example.com/${name}.mp3`, durationSeconds: 1 });
    expect(res.statusCode).toBe(200);
  }
  expect((await send('PATCH', `/v1/music/${channel.id}`, { loop: 'queue' })).statusCode).toBe(200);
  return { channel, target };
}

const publish = t.publishGuildsEvent;
const applied = t.applied;

/** The players and tracks left of these channels. */
async function left(...channelIds: string[]) {
  const { rows } = await t.runtime.pool.query(
    `SELECT (SELECT count(*)::int FROM players WHERE channel_id = ANY($1)) AS players,
            (SELECT count(*)::int FROM tracks WHERE channel_id = ANY($1)) AS tracks`,
    [channelIds],
  );
  return rows[0];
}

/** The deletion's transaction waiting for music's server lock (its space 727101), in this test's database. */
const DELETION_WAITING = `SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND classid = 727101 AND NOT granted
  AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`;

const eventsOf = async (channelId: string) => (await t.playerEvents()).filter((e) => e.player.channelId === channelId).length;

describe('players of deleted channels and servers', () => {
  it('removes a deleted voice channel’s player and its queue, with no event; the clock no longer advances it', async () => {
    const deleted = await loopingPlayer();
    const other = await loopingPlayer(deleted.channel.serverId);
    const eventsBefore = await eventsOf(deleted.channel.id);
    const eventId = await publish(GUILDS_SUBJECTS.channelDeleted, { id: deleted.channel.id, serverId: deleted.channel.serverId });
    await until(() => applied(eventId), { what: 'the channel deletion is applied' });

    expect(await left(deleted.channel.id)).toEqual({ players: 0, tracks: 0 });
    expect(await left(other.channel.id)).toEqual({ players: 1, tracks: 2 });
    await advanceDuePlayers(clockDeps, new Date(Date.now() + 60_000));
    expect(await eventsOf(deleted.channel.id)).toBe(eventsBefore);
    expect(await eventsOf(other.channel.id)).toBeGreaterThan(0);
  });

  it('removes every player of a deleted server, and no other server’s', async () => {
    const serverId = uuidv7();
    const [first, second, elsewhere] = [await loopingPlayer(serverId), await loopingPlayer(serverId), await loopingPlayer()];
    const eventId = await publish(GUILDS_SUBJECTS.serverDeleted, { id: serverId, memberIds: [alice] });
    await until(() => applied(eventId), { what: 'the server deletion is applied' });
    expect(await left(first.channel.id, second.channel.id)).toEqual({ players: 0, tracks: 0 });
    expect(await left(elsewhere.channel.id)).toEqual({ players: 1, tracks: 2 });
  });

  it('applies a deletion published while music was down once it is back (durable consumers)', async () => {
    const { channel } = await loopingPlayer();
    await Promise.all(consumers.map((c) => c.stop()));
    const eventId = await publish(GUILDS_SUBJECTS.channelDeleted, { id: channel.id, serverId: channel.serverId });
    expect(await left(channel.id)).toEqual({ players: 1, tracks: 2 });
    consumers = await consumeGuildDeletions(t.runtime);
    await until(() => applied(eventId), { what: 'the deletion is applied after the restart' });
    expect(await left(channel.id)).toEqual({ players: 0, tracks: 0 });
  });

  it('refuses (404) a play that guilds let through just before the channel was deleted, once the deletion is applied', async () => {
    const channel = t.guilds.voiceChannelWith([alice]);
    // Guilds checks the play, then the channel is deleted and music applies it, then the play writes.
    t.guilds.answering = async () => {
      t.guilds.answering = undefined;
      const eventId = await publish(GUILDS_SUBJECTS.channelDeleted, { id: channel.id, serverId: channel.serverId });
      await until(() => applied(eventId), { what: 'the deletion is applied' });
    };
    const res = await send('POST', '/v1/music/play', {
      channelId: channel.id,
      serverId: channel.serverId,
      url: 'https://example.com/late.mp3',
      durationSeconds: 1,
    });
    expect(res.statusCode, res.body).toBe(404);
    expect(res.json()).toEqual({ error: 'Channel not found' });
    expect(await left(channel.id)).toEqual({ players: 0, tracks: 0 });
  });

  it('waits for a control in flight on the server, then removes the player it created', async () => {
    const channel = t.guilds.voiceChannelWith([alice]);
    // A control's transaction, past its check and holding the player it just created, not committed.
    const control = await t.runtime.pool.connect();
    try {
      await control.query('BEGIN');
      await assertChannelNotDeleted(control, channel.id, channel.serverId);
      await players.lockPlayer(control, channel.id, channel.serverId);
      const eventId = await publish(GUILDS_SUBJECTS.channelDeleted, { id: channel.id, serverId: channel.serverId });
      await until(async () => (await t.runtime.pool.query(DELETION_WAITING)).rowCount === 1, {
        what: 'the deletion waits for the control',
      });
      await control.query('COMMIT');
      await until(() => applied(eventId), { what: 'the deletion is applied' });
    } finally {
      control.release();
    }
    expect(await left(channel.id)).toEqual({ players: 0, tracks: 0 });
  });

  it('refuses a control on a channel of a server whose deletion was applied', async () => {
    const serverId = uuidv7();
    const eventId = await publish(GUILDS_SUBJECTS.serverDeleted, { id: serverId });
    await until(() => applied(eventId), { what: 'the server deletion is applied' });
    // The stand-in still answers for it, as guilds would have a moment before the deletion.
    const channel = t.guilds.voiceChannelWith([alice], { serverId });
    const res = await send('POST', '/v1/music/play', { channelId: channel.id, serverId, url: 'https://example.com/x.mp3' });
    expect(res.statusCode).toBe(404);
    expect(await left(channel.id)).toEqual({ players: 0, tracks: 0 });
  });

  it('lets a player of a live channel go on while another channel’s deletion is applied', async () => {
    const { channel, target } = await loopingPlayer();
    const eventId = await publish(GUILDS_SUBJECTS.channelDeleted, { id: uuidv7(), serverId: channel.serverId });
    await until(() => applied(eventId), { what: 'the deletion is applied' });
    const res = await send('POST', '/v1/music/pause', target);
    expect(res.statusCode).toBe(200);
    expect((res.json() as PlayerState).paused).toBe(true);
  });
});
