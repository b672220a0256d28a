import { randomBytes } from 'node:crypto';
import { freePorts, GatewayClient, type IsolatedPlatform } from '@chat/testkit';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { api, ownPlatform, randomIp } from './helpers.ts';

/**
 * A platform running two replicas of guilds, social and music behind two gateways (a platform of
 * its own): gateway A proxies to the first process of each service, gateway B to the second, all
 * sharing the databases, Redis and NATS. What must hold whichever replica a request or an event
 * reaches: the rate tiers, Idempotency-Key, live dispatch, social's consumers and the music clock.
 */

const PASSWORD = 'replica-pass';

let run: IsolatedPlatform;
let A: string;
let B: string;
const clients: GatewayClient[] = [];

beforeAll(async () => {
  run = await ownPlatform('rep', 'replicas');
  A = run.platform.urls.gateway;
  const [guildsPort, socialPort, musicPort, gatewayPort] = (await freePorts(4)) as [number, number, number, number];
  const [guilds, social, music] = await Promise.all([
    run.platform.startReplica('guilds', guildsPort),
    run.platform.startReplica('social', socialPort),
    run.platform.startReplica('music', musicPort),
  ]);
  const gatewayB = await run.platform.startReplica('gateway', gatewayPort, {
    GUILDS_URL: guilds.url,
    SOCIAL_URL: social.url,
    MUSIC_URL: music.url,
  });
  B = gatewayB.url;
}, 180_000);

afterAll(async () => {
  for (const c of clients) c.close();
  await run?.stop();
});

interface User {
  id: string;
  token: string;
  ip: string;
}

/** Gateway A for even `i`, B for odd: a burst of calls split evenly over both replicas. */
const either = (i: number) => (i % 2 ? B : A);

/** A JSON call through gateway `base` (A or B). */
const call = (base: string, method: string, path: string, options: Parameters<typeof api>[2] = {}) =>
  api(method, path, { ...options, base });

async function newUser(prefix: string): Promise<User> {
  const username = `${prefix}_${randomBytes(4).toString('hex')}`;
  const res = await call(A, 'POST', '/v1/auth/register', { body: { username, email: `${username}@example.test`, password: PASSWORD } });
  expect(res.status).toBe(201);
  return { id: res.body.user.id, token: res.body.token, ip: randomIp() };
}

/** A socket of `user` on the gateway at `base`, identified. */
async function connect(base: string, user: User): Promise<GatewayClient> {
  const client = await GatewayClient.connect(base, { ip: user.ip });
  clients.push(client);
  await client.identify(user.token);
  return client;
}

/** A public server of `owner` that `members` joined, with its text and voice channels. */
async function serverWith(owner: User, ...members: User[]) {
  const created = await call(A, 'POST', '/v1/servers', {
    user: owner,
    body: { name: `rep ${randomBytes(3).toString('hex')}`, isPublic: true },
  });
  expect(created.status).toBe(201);
  const serverId = created.body.id as string;
  for (const m of members) expect((await call(A, 'POST', `/v1/servers/${serverId}/join`, { user: m })).status).toBe(200);
  const channels = (await call(A, 'GET', `/v1/servers/${serverId}/channels`, { user: owner })).body as {
    id: string;
    channelType: string;
  }[];
  const of = (type: string) => channels.find((c) => c.channelType === type)?.id as string;
  return { serverId, textId: of('text'), voiceId: of('voice') };
}

/** Posts `content` through the gateway at `base` and answers the message id. */
async function post(base: string, user: User, channelId: string, content: string): Promise<string> {
  const res = await call(base, 'POST', `/v1/channels/${channelId}/messages`, { user, ip: randomIp(), body: { content } });
  expect(res.status).toBe(201);
  return res.body.id;
}

/** Posts `count` messages at once, alternately through A and B, and answers their ids. */
const postThroughBoth = (user: User, channelId: string, count: number, content: (i: number) => string) =>
  Promise.all(Array.from({ length: count }, (_, i) => post(either(i), user, channelId, content(i))));

describe('rate tiers shared by both gateways', () => {
  it('admits exactly 5 login attempts of one client IP a minute, half of them sent to each gateway', async () => {
    const ip = randomIp();
    const body = { login: `nobody_${randomBytes(4).toString('hex')}`, password: 'wrong-password' };
    const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => call(either(i), 'POST', '/v1/auth/login', { ip, body })));
    expect(answers.map((a) => a.status).sort()).toEqual([401, 401, 401, 401, 401, 429, 429, 429]);
    for (const limited of answers.filter((a) => a.status === 429)) {
      expect(limited.body).toEqual({ error: expect.stringMatching(/^Too many requests/) });
      expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    }
  });

  it('admits exactly 30 executions of one webhook a minute over both gateways, and posts exactly those', async () => {
    const owner = await newUser('hook');
    const { textId } = await serverWith(owner);
    const hook = await call(A, 'POST', `/v1/channels/${textId}/webhooks`, { user: owner, body: { name: 'hook' } });
    expect(hook.status).toBe(201);
    const answers = await Promise.all(
      Array.from({ length: 34 }, (_, i) =>
        call(either(i), 'POST', `/v1/webhooks/${hook.body.id}/${hook.body.token}`, { body: { content: `w${i}` } }),
      ),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([...Array(30).fill(204), ...Array(4).fill(429)]);
    const list = await call(B, 'GET', `/v1/channels/${textId}/messages?limit=100`, { user: owner });
    expect(list.body.filter((m: { webhookId: string | null }) => m.webhookId === hook.body.id)).toHaveLength(30);
  });
});

describe('writes through both guilds replicas', () => {
  it('creates one message and one MESSAGE_CREATE for an Idempotency-Key sent to both replicas at once', async () => {
    const [owner, member] = [await newUser('key'), await newUser('key')];
    const { textId } = await serverWith(owner, member);
    const socket = await connect(A, member);
    const headers = { 'idempotency-key': `k-${randomBytes(6).toString('hex')}` };
    const answers = await Promise.all(
      [A, B, A, B].map((base) =>
        call(base, 'POST', `/v1/channels/${textId}/messages`, { user: owner, body: { content: 'once' }, headers }),
      ),
    );
    for (const a of answers) expect([201, 409]).toContain(a.status);
    const ids = new Set(answers.filter((a) => a.status === 201).map((a) => a.body.id as string));
    expect(ids.size).toBe(1);
    const [id] = ids;
    // Committed after every answered attempt, so delivered after any event they caused.
    const marker = await post(B, owner, textId, 'marker');
    await socket.dispatch('MESSAGE_CREATE', (d) => d.id === marker);
    expect(socket.dispatches('MESSAGE_CREATE').map((f) => f.d.id)).toEqual([id, marker]);
    const list = await call(B, 'GET', `/v1/channels/${textId}/messages`, { user: member });
    expect(list.body.filter((m: { content: string }) => m.content === 'once')).toHaveLength(1);
  });

  it('delivers each message posted through both replicas once to sockets on both gateways, numbered without gaps', async () => {
    const [owner, member] = [await newUser('live'), await newUser('live')];
    const { textId } = await serverWith(owner, member);
    const sockets = [await connect(A, member), await connect(B, member)];
    const posted = await postThroughBoth(owner, textId, 20, (i) => `m${i}`);
    // Live dispatch follows commit order: a message posted after every answer comes last.
    const marker = await post(B, owner, textId, 'marker');
    for (const socket of sockets) {
      await socket.dispatch('MESSAGE_CREATE', (d) => d.id === marker);
      const received = socket.dispatches('MESSAGE_CREATE').map((f) => f.d.id as string);
      expect(received.at(-1)).toBe(marker);
      expect([...received].sort()).toEqual([...posted, marker].sort());
      const seqs = socket.dispatches().map((f) => f.s as number);
      expect(seqs).toEqual(seqs.map((_, i) => (seqs[0] as number) + i));
    }
  });
});

describe('social consumers on two replicas', () => {
  it('count each mention once in the notification feed and the read state, whichever replica applied it', async () => {
    const [owner, member] = [await newUser('mention'), await newUser('mention')];
    const { textId } = await serverWith(owner, member);
    const posted = await postThroughBoth(owner, textId, 12, (i) => `hey <@${member.id}> ${i}`);
    const feed = await vi.waitFor(
      async () => {
        const res = await call(B, 'GET', '/v1/notifications?limit=100', { user: member });
        const mentioned = res.body.notifications.map((n: { messageId: string }) => n.messageId);
        expect(mentioned).toEqual(expect.arrayContaining(posted));
        return res.body;
      },
      { timeout: 15_000, interval: 200 },
    );
    expect(feed.notifications.filter((n: { kind: string }) => n.kind === 'mention')).toHaveLength(posted.length);
    expect(feed.unreadCount).toBe(posted.length);
    const states = await call(A, 'GET', '/v1/users/@me/read-states', { user: member });
    expect(states.body.find((s: { id: string }) => s.id === textId)).toMatchObject({
      mentionCount: posted.length,
      lastMessageId: [...posted].sort().at(-1),
      unread: true,
    });
  });
});

describe('the music clock on two replicas', () => {
  it('moves a player on once per ended track while both music replicas run their clocks', async () => {
    const owner = await newUser('clock');
    const { serverId, voiceId } = await serverWith(owner);
    expect((await call(A, 'POST', '/v1/voice/join', { user: owner, body: { channelId: voiceId } })).status).toBe(200);
    const socket = await connect(A, owner);
    const track = (i: number) => ({
      channelId: voiceId,
      serverId,
      url: `https://example.test/t${i}.mp3`,
      title: `t${i}`,
      durationSeconds: 1,
    });
    for (const i of [0, 1]) expect((await call(either(i), 'POST', '/v1/music/queue', { user: owner, body: track(i) })).status).toBe(201);
    expect((await call(A, 'POST', '/v1/music/play', { user: owner, body: track(2) })).status).toBe(200);
    const idle = (d: { action: string; player: { current: unknown } }) => d.action === 'ended' && d.player.current === null;
    await socket.dispatch('MUSIC_PLAYER_UPDATE', idle, 15_000);
    const updates = socket.dispatches('MUSIC_PLAYER_UPDATE').map((f) => f.d);
    const ended = updates.filter((d) => d.action === 'ended').map((d) => d.player.current?.url ?? null);
    expect(ended).toEqual(['https://example.test/t1.mp3', 'https://example.test/t2.mp3', null]);
    const versions = updates.map((d) => d.player.version as number);
    expect(versions).toEqual(versions.map((_, i) => (versions[0] as number) + i));
    const state = await call(B, 'GET', `/v1/music/${voiceId}`, { user: owner });
    expect(state.body).toMatchObject({ current: null, queue: [] });
  });
});
