import { DEFAULT_EVERYONE_PERMISSIONS, MENTION_BATCH_SIZE, Permission, PresenceSeenRpc, toMask, VisibleChannelsRpc } from '@chat/contracts';
import { requestRpc, serveRpc } from '@chat/kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MENTIONS_CONSUMER } from '../src/bus/mentions.ts';
import { newId, startGuilds, until } from './harness.ts';

/**
 * Issue 19: after a message is committed, guilds' own consumer of `guilds.message.created`
 * resolves its mentions to the members who may view the channel now (the permission function of
 * REST, overrides included) and publishes them as `guilds.message.mentioned` batches.
 */
const g = await startGuilds();
afterAll(() => g.close());

const [owner, alice, bob, carol, dave] = [newId(), newId(), newId(), newId(), newId()];
let serverId: string;
let channelId: string;
let openChannelId: string;
let teamRoleId: string;

type Mentioned = {
  messageId: string;
  via: string;
  userIds: string[];
  excerpt: string;
  channelId: string;
  serverId: string;
  authorId: string;
};

const post = async (author: string, content: string, extra: object = {}) => {
  const res = await g.call(author, 'POST', `/v1/channels/${channelId}/messages`, { content, ...extra });
  expect(res.status).toBe(201);
  return res.body as { id: string; mentions: { everyone: boolean } };
};

/** Waits until the mentions consumer has applied the message's created event, then answers its batches. */
async function mentionsOf(messageId: string): Promise<Mentioned[]> {
  await until(async () => {
    const { rowCount } = await g.db.query(
      `SELECT 1 FROM processed_events p JOIN outbox o ON o.id = p.event_id
       WHERE p.consumer = $1 AND o.subject = 'guilds.message.created' AND o.payload->'data'->>'id' = $2`,
      [MENTIONS_CONSUMER.durable, messageId],
    );
    return rowCount === 1;
  });
  return (await g.outbox('guilds.message.mentioned')).map((e) => e.data as Mentioned).filter((m) => m.messageId === messageId);
}

const byVia = (batches: Mentioned[]) => {
  const out: Record<string, string[]> = {};
  for (const b of batches) out[b.via] = [...(out[b.via] ?? []), ...b.userIds].sort();
  return out;
};

beforeAll(async () => {
  serverId = (await g.call(owner, 'POST', '/v1/servers', { name: 'Mentions', isPublic: true })).body.id;
  for (const user of [alice, bob, carol, dave]) expect((await g.call(user, 'POST', `/v1/servers/${serverId}/join`)).status).toBe(200);
  teamRoleId = (await g.call(owner, 'POST', `/v1/servers/${serverId}/roles`, { name: 'team', mentionable: true })).body.id;
  expect((await g.call(owner, 'PUT', `/v1/servers/${serverId}/members/${bob}/roles/${teamRoleId}`)).status).toBe(204);
  channelId = (await g.call(owner, 'POST', `/v1/servers/${serverId}/channels`, { name: 'general', channelType: 'text' })).body.id;
  openChannelId = (await g.call(owner, 'POST', `/v1/servers/${serverId}/channels`, { name: 'open', channelType: 'text' })).body.id;
  // carol may not view #general: a member override denies VIEW_CHANNEL.
  const denied = await g.call(owner, 'PUT', `/v1/channels/${channelId}/permissions`, {
    userId: carol,
    allowBits: 0,
    denyBits: toMask(Permission.VIEW_CHANNEL),
  });
  expect(denied.status).toBe(200);
});

describe('resolved mentions', () => {
  it('names each member who may view the channel once, by the strongest way it reached them, never the author', async () => {
    const message = await post(owner, `look <@${alice}> and <@&${teamRoleId}> and <@${carol}>: @everyone`);
    const batches = await mentionsOf(message.id);
    expect(byVia(batches)).toEqual({ user: [alice], role: [bob], everyone: [dave] });
    expect(batches[0]).toMatchObject({ channelId, serverId, authorId: owner, excerpt: 'look @user and @team and @user: @everyone' });
    // carol is named but denied VIEW_CHANNEL: she is in no batch.
    expect(batches.flatMap((b) => b.userIds)).not.toContain(carol);
  });

  it('mentions the author of the message replied to, when they may view the channel', async () => {
    const original = await post(alice, 'a question');
    const reply = await post(bob, 'an answer', { replyToId: original.id });
    expect(byVia(await mentionsOf(reply.id))).toEqual({ reply: [alice] });
  });

  it('tells nobody of a pin: the pinned system message points at the message, yet is no reply to its author', async () => {
    const pinned = await post(alice, 'pin me please');
    expect((await g.call(owner, 'PUT', `/v1/channels/${channelId}/pins/${pinned.id}`)).status).toBe(204);
    const notice = await g.db.query("SELECT id FROM messages WHERE channel_id = $1 AND type = 'pinned' AND reply_to_id = $2", [
      channelId,
      pinned.id,
    ]);
    expect(notice.rowCount).toBe(1);
    // The consumer reads in stream order: once the next message is applied, the pin's was passed.
    const next = await post(owner, `<@${alice}> control`);
    expect(byVia(await mentionsOf(next.id))).toEqual({ user: [alice] });
    const ofNotice = (await g.outbox('guilds.message.mentioned')).filter((e) => (e.data as Mentioned).messageId === notice.rows[0].id);
    expect(ofNotice).toEqual([]);
  });

  it('publishes nothing for a message that mentions nobody, and records nothing for it', async () => {
    const plain = await post(alice, 'nothing to see');
    // The consumer reads in stream order: once the next message is applied, the plain one was passed.
    const next = await post(alice, `<@${bob}>`);
    expect(byVia(await mentionsOf(next.id))).toEqual({ user: [bob] });
    expect((await g.outbox('guilds.message.mentioned')).filter((e) => (e.data as Mentioned).messageId === plain.id)).toEqual([]);
    const { rowCount } = await g.db.query(
      `SELECT 1 FROM processed_events p JOIN outbox o ON o.id = p.event_id WHERE p.consumer = $1 AND o.payload->'data'->>'id' = $2`,
      [MENTIONS_CONSUMER.durable, plain.id],
    );
    expect(rowCount).toBe(0);
  });

  it('ignores @everyone from an author without MENTION_EVERYONE (the message says so, and nobody is reached by it)', async () => {
    const without = toMask(DEFAULT_EVERYONE_PERMISSIONS & ~Permission.MENTION_EVERYONE);
    expect((await g.call(owner, 'PATCH', `/v1/servers/${serverId}/roles/${serverId}`, { permissions: without })).status).toBe(200);
    try {
      const message = await post(dave, `@everyone and <@${alice}>`);
      expect(message.mentions.everyone).toBe(false);
      expect(byVia(await mentionsOf(message.id))).toEqual({ user: [alice] });
    } finally {
      const back = toMask(DEFAULT_EVERYONE_PERMISSIONS);
      expect((await g.call(owner, 'PATCH', `/v1/servers/${serverId}/roles/${serverId}`, { permissions: back })).status).toBe(200);
    }
  });

  it(`splits an @everyone of a big server into batches of at most ${MENTION_BATCH_SIZE} users`, async () => {
    const crowd = Array.from({ length: 1_200 }, () => newId());
    await g.db.query('INSERT INTO members (server_id, user_id) SELECT $1, u FROM unnest($2::uuid[]) AS u', [serverId, crowd]);
    const message = await post(owner, '@everyone big news');
    const batches = await mentionsOf(message.id);
    expect(batches.length).toBe(Math.ceil((crowd.length + 3) / MENTION_BATCH_SIZE));
    for (const b of batches) expect(b.userIds.length).toBeLessThanOrEqual(MENTION_BATCH_SIZE);
    const reached = batches.flatMap((b) => b.userIds);
    expect(new Set(reached).size).toBe(reached.length);
    expect(reached.sort()).toEqual([...crowd, alice, bob, dave].sort());
  });
});

describe('@here', () => {
  /** Per question: whether a transaction held a message row of the channel while guilds waited for the answer. */
  const rowsHeldWhileAsked: boolean[] = [];
  let lastCheck: Promise<unknown> = Promise.resolve();
  const messageRowsHeld = (): Promise<boolean> => {
    // One at a time: a big server's questions come together, and two FOR UPDATE NOWAIT of the same rows find each other.
    const check = lastCheck.then(() =>
      g.db.query('SELECT 1 FROM messages WHERE channel_id = $1 FOR UPDATE NOWAIT', [channelId]).then(
        () => false,
        (err: { code?: string }) => (err.code === '55P03' ? true : Promise.reject(err)),
      ),
    );
    lastCheck = check.catch(() => {});
    return check;
  };

  beforeAll(async () => {
    // The gateway as guilds asks it: alice online, bob idle, dave offline (or invisible: the same to others).
    serveRpc(g.runtime.bus, g.runtime.log, PresenceSeenRpc, async ({ userIds }) => {
      rowsHeldWhileAsked.push(await messageRowsHeld());
      return {
        statuses: Object.fromEntries(userIds.map((id) => [id, id === alice ? 'online' : id === bob ? 'idle' : 'offline'] as const)),
      };
    });
    await g.runtime.bus.nc.flush();
  });

  it('reaches only the members online as others see them; @everyone (also beside @here) reaches all', async () => {
    const here = await post(owner, '@here standup in 5');
    expect(here.mentions.everyone).toBe(true);
    expect(byVia(await mentionsOf(here.id))).toEqual({ everyone: [alice, bob].sort() });
    const both = await post(owner, '@here and @everyone');
    expect(byVia(await mentionsOf(both.id)).everyone).toEqual(expect.arrayContaining([alice, bob, dave]));
    // A direct mention reaches its user whether online or not.
    const named = await post(owner, `@here <@${dave}>`);
    expect(byVia(await mentionsOf(named.id))).toEqual({ user: [dave], everyone: [alice, bob].sort() });
  });

  it('asks the gateway before its transaction: a slow answer holds no message row and no connection of the pool', async () => {
    rowsHeldWhileAsked.length = 0;
    const here = await post(owner, '@here lunch');
    expect(byVia(await mentionsOf(here.id))).toEqual({ everyone: [alice, bob].sort() });
    // The server's crowd makes several questions of one message.
    expect(rowsHeldWhileAsked.length).toBeGreaterThan(0);
    expect(new Set(rowsHeldWhileAsked)).toEqual(new Set([false]));
  });
});

describe('rpc.guilds.channels.visible', () => {
  it('answers which of the channels the user may view now: overrides apply, unknown ids and other servers are absent', async () => {
    const ask = (userId: string, channelIds: string[]) => requestRpc(g.runtime.bus, VisibleChannelsRpc, { userId, channelIds });
    const unknown = newId();
    expect((await ask(alice, [channelId, openChannelId, unknown])).channelIds.sort()).toEqual([channelId, openChannelId].sort());
    expect((await ask(carol, [channelId, openChannelId, unknown])).channelIds).toEqual([openChannelId]);
    expect((await ask(newId(), [channelId, openChannelId])).channelIds).toEqual([]);
    expect((await ask(alice, [])).channelIds).toEqual([]);
  });

  it('follows a change at once: a hidden channel drops out for those who may not see it', async () => {
    const ask = (userId: string) => requestRpc(g.runtime.bus, VisibleChannelsRpc, { userId, channelIds: [openChannelId] });
    expect((await ask(dave)).channelIds).toEqual([openChannelId]);
    const denied = await g.call(owner, 'PUT', `/v1/channels/${openChannelId}/permissions`, {
      roleId: serverId,
      allowBits: 0,
      denyBits: toMask(Permission.VIEW_CHANNEL),
    });
    expect(denied.status).toBe(200);
    expect((await ask(dave)).channelIds).toEqual([]);
    expect((await ask(owner)).channelIds).toEqual([openChannelId]);
  });
});
