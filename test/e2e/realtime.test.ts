import { randomBytes, randomInt } from 'node:crypto';
import { DISPATCH_NAMES } from '@chat/contracts';
import { freePort, GatewayClient, type IsolatedPlatform } from '@chat/testkit';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { deviceKeys } from './device-keys.ts';
import { ownPlatform } from './helpers.ts';

/**
 * The real-time socket through real gateway processes: a platform of its own (this file kills a
 * gateway replica), with a short heartbeat and resume window so that timeouts happen in seconds.
 */

const HEARTBEAT_MS = 2_000;
const RESUME_WINDOW_MS = 6_000;
const VIEW_CHANNEL = 1 << 10;
const SEND_MESSAGES = 1 << 11;
const PASSWORD = 'realtime-pass';

let run: IsolatedPlatform;
let gateway: string;
let replica: { url: string; stop(signal?: NodeJS.Signals): Promise<number | null> };
const clients: GatewayClient[] = [];

beforeAll(async () => {
  run = await ownPlatform('rt', 'realtime', {
    gateway: { GATEWAY_HEARTBEAT_INTERVAL_MS: String(HEARTBEAT_MS), GATEWAY_RESUME_WINDOW_MS: String(RESUME_WINDOW_MS) },
  });
  gateway = run.platform.urls.gateway;
  replica = await run.platform.startGatewayReplica(await freePort());
});

afterAll(async () => {
  for (const c of clients) c.close();
  await run?.stop();
});

interface User {
  id: string;
  username: string;
  token: string;
  refreshToken: string;
  ip: string;
}

const randomIp = () => `10.${randomInt(256)}.${randomInt(256)}.${randomInt(1, 255)}`;

async function call(method: string, path: string, options: { user?: User; body?: unknown } = {}) {
  const headers: Record<string, string> = { 'x-forwarded-for': options.user?.ip ?? randomIp() };
  if (options.user) headers.authorization = `Bearer ${options.user.token}`;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${gateway}${path}`, {
    method,
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  const text = await res.text();
  // biome-ignore lint/suspicious/noExplicitAny: tests read whatever the answer holds and assert on it
  return { status: res.status, body: text ? (JSON.parse(text) as any) : undefined };
}

async function newUser(prefix: string): Promise<User> {
  const username = `${prefix}_${randomBytes(4).toString('hex')}`;
  const res = await call('POST', '/v1/auth/register', { body: { username, email: `${username}@example.test`, password: PASSWORD } });
  expect(res.status).toBe(201);
  return { id: res.body.user.id, username, token: res.body.token, refreshToken: res.body.refreshToken, ip: randomIp() };
}

/**
 * A call that names another user, retried while social has not yet applied auth's event about that
 * user (its read-model answers 404 until then).
 */
async function once404sPass(method: string, path: string, options: { user: User; body: unknown }, expected: number) {
  const res = await vi.waitFor(
    async () => {
      const answer = await call(method, path, options);
      if (answer.status === 404) throw new Error('the other user is not known to the service yet');
      return answer;
    },
    { timeout: 10_000, interval: 50 },
  );
  expect(res.status).toBe(expected);
  return res;
}

async function befriend(a: User, b: User) {
  await once404sPass('POST', '/v1/friends/requests', { user: a, body: { userId: b.id } }, 201);
  expect((await call('POST', '/v1/friends/accept', { user: b, body: { userId: a.id } })).status).toBe(200);
}

async function connect(user: User | undefined, options: { url?: string; heartbeat?: boolean } = {}) {
  const client = await GatewayClient.connect(options.url ?? gateway, { ip: user?.ip ?? randomIp(), heartbeat: options.heartbeat });
  clients.push(client);
  return client;
}

async function identified(user: User, url?: string) {
  const client = await connect(user, { url });
  const ready = await client.identify(user.token);
  return { client, ready };
}

/** A server owned by `owner` with `members` joined, and its text channel. */
async function serverWith(owner: User, ...members: User[]) {
  const server = (
    await call('POST', '/v1/servers', { user: owner, body: { name: `rt ${randomBytes(3).toString('hex')}`, isPublic: true } })
  ).body;
  for (const m of members) expect((await call('POST', `/v1/servers/${server.id}/join`, { user: m })).status).toBe(200);
  const channels = (await call('GET', `/v1/servers/${server.id}/channels`, { user: owner })).body as { id: string; channelType: string }[];
  return { serverId: server.id as string, channelId: (channels.find((c) => c.channelType === 'text') as { id: string }).id };
}

async function post(user: User, channelId: string, content: string): Promise<string> {
  const res = await call('POST', `/v1/channels/${channelId}/messages`, { user, body: { content } });
  expect(res.status).toBe(201);
  return res.body.id;
}

const contentOf = (c: GatewayClient, t = 'MESSAGE_CREATE') => c.dispatches(t).map((f) => f.d.content);

describe('GET /v1/gateway', () => {
  it('answers where to open the socket, without a token', async () => {
    const res = await call('GET', '/v1/gateway');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ url: `${gateway.replace('http', 'ws')}/v1/gateway/ws` });
  });

  it('answers 400 to a plain GET of the socket path', async () => {
    const res = await call('GET', '/v1/gateway/ws');
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: expect.any(String) });
  });
});

describe('opcodes', () => {
  it('says HELLO, answers IDENTIFY with READY (seq 1) and HEARTBEAT with HEARTBEAT_ACK', async () => {
    const [owner, member] = [await newUser('rtready'), await newUser('rtpeer')];
    const { serverId } = await serverWith(owner, member);
    const conversation = await once404sPass('POST', '/v1/dm/conversations', { user: owner, body: { userIds: [member.id] } }, 201);

    const client = await connect(owner, { heartbeat: false });
    expect(client.frames[0]).toEqual({ op: 10, d: { heartbeatInterval: HEARTBEAT_MS }, s: null, t: null });
    const ready = await client.identify(owner.token);
    const readyFrame = client.dispatches('READY')[0];
    expect(readyFrame?.s).toBe(1);
    expect(ready).toMatchObject({
      sessionId: expect.any(String),
      user: { id: owner.id },
      serverIds: [serverId],
      conversationIds: [conversation.body.id],
    });

    client.send({ op: 1, d: 1 });
    expect(await client.next((f) => f.op === 11)).toEqual({ op: 11, d: null, s: null, t: null });
  });

  it.each([
    ['an unknown opcode', { op: 99, d: null }, 4001],
    ['invalid JSON', '{"op": 2', 4002],
    ['an IDENTIFY without a token', { op: 2, d: {} }, 4002],
    ['a frame without op', { d: 1 }, 4002],
    ['a bad token', { op: 2, d: { token: 'not-a-jwt' } }, 4004],
  ])('closes on %s with %s', async (_name, frame, code) => {
    const client = await connect(undefined);
    client.send(frame);
    expect((await client.closeCode()).code).toBe(code);
  });

  it('closes a socket that does not identify in time with 4003', async () => {
    const client = await connect(undefined);
    expect((await client.closeCode()).code).toBe(4003);
  });

  it('answers a HEARTBEAT sent before IDENTIFY, and identifies the socket after it', async () => {
    const user = await newUser('rtearly');
    const client = await connect(user, { heartbeat: false });
    client.send({ op: 1, d: null });
    expect(await client.next((f) => f.op === 11)).toEqual({ op: 11, d: null, s: null, t: null });
    expect((await client.identify(user.token)).user.id).toBe(user.id);
  });

  it.each([
    ['a second IDENTIFY', 2],
    ['a RESUME', 6],
  ])('closes %s on an identified socket with 4005', async (_name, op) => {
    const user = await newUser('rttwice');
    const { client, ready } = await identified(user);
    client.send({ op, d: { token: user.token, ...(op === 6 && { sessionId: ready.sessionId, seq: 1 }) } });
    expect((await client.closeCode()).code).toBe(4005);
  });

  it('closes an identified socket that stops heartbeating with 4009', async () => {
    const user = await newUser('rtsilent');
    const client = await connect(user, { heartbeat: false });
    client.send({ op: 2, d: { token: user.token } });
    await client.dispatch('READY');
    expect((await client.closeCode()).code).toBe(4009);
  });

  it('closes a client that sends more than 120 frames a minute with 4008', async () => {
    const client = await connect(undefined, { heartbeat: false });
    for (let i = 0; i < 121; i++) client.send({ op: 1, d: null });
    expect((await client.closeCode()).code).toBe(4008);
  });

  it('closes a RESUME from a seq the session never reached with 4007', async () => {
    const user = await newUser('rtseq');
    const { client, ready } = await identified(user);
    client.close();
    const again = await connect(user);
    again.send({ op: 6, d: { token: user.token, sessionId: ready.sessionId, seq: 50 } });
    expect((await again.closeCode()).code).toBe(4007);
  });

  it('answers a RESUME of an unknown session with INVALID_SESSION {resumable: false}', async () => {
    const user = await newUser('rtunknown');
    const client = await connect(user);
    client.send({ op: 6, d: { token: user.token, sessionId: crypto.randomUUID(), seq: 0 } });
    expect(await client.next((f) => f.op === 9)).toEqual({ op: 9, d: { resumable: false }, s: null, t: null });
  });

  it('survives a burst of malformed frames from many sockets and keeps serving', async () => {
    const sockets = await Promise.all(Array.from({ length: 20 }, () => connect(undefined, { heartbeat: false })));
    for (const s of sockets) for (const junk of ['{', '\u0000\u0001', '[]', '{"op":"x"}', 'null']) s.send(junk);
    const codes = await Promise.all(sockets.map((s) => s.closeCode()));
    expect(codes.every((c) => c.code === 4002)).toBe(true);
    expect((await fetch(`${gateway}/v1/health`)).status).toBe(200);
    const user = await newUser('rtafter');
    expect((await identified(user)).ready.user.id).toBe(user.id);
  });
});

describe('READY', () => {
  it('lists only the servers and conversations the user is still in, and the account as GET /v1/users/@me answers it', async () => {
    const [user, owner, third] = [await newUser('rtleaver'), await newUser('rtlowner'), await newUser('rtlthird')];
    const { serverId: kept } = await serverWith(owner, user);
    const { serverId: left } = await serverWith(owner, user);
    expect((await call('DELETE', `/v1/servers/${left}/members/@me`, { user })).status).toBe(204);
    const pair = (await once404sPass('POST', '/v1/dm/conversations', { user: owner, body: { userIds: [user.id] } }, 201)).body;
    const group = (await once404sPass('POST', '/v1/dm/conversations', { user: owner, body: { userIds: [user.id, third.id] } }, 201)).body;
    expect((await call('DELETE', `/v1/dm/conversations/${group.id}/members/@me`, { user })).status).toBe(204);

    const { ready } = await identified(user);
    expect(ready.serverIds).toEqual([kept]);
    expect(ready.conversationIds).toEqual([pair.id]);
    expect(ready.user).toEqual((await call('GET', '/v1/users/@me', { user })).body);
  });
});

describe('dispatch and who receives it', () => {
  it('sends a channel message to its viewers, and nothing from a channel an override hides', async () => {
    const [owner, member, hidden] = [await newUser('rtown'), await newUser('rtmem'), await newUser('rthid')];
    const { serverId, channelId } = await serverWith(owner, member, hidden);
    const secret = (await call('POST', `/v1/servers/${serverId}/channels`, { user: owner, body: { name: 'secret', channelType: 'text' } }))
      .body;
    const deny = await call('PUT', `/v1/channels/${secret.id}/permissions`, {
      user: owner,
      body: { userId: hidden.id, allowBits: 0, denyBits: VIEW_CHANNEL },
    });
    expect(deny.status).toBe(200);
    const [m, h] = [(await identified(member)).client, (await identified(hidden)).client];

    await post(owner, secret.id, 'for some eyes only');
    await post(owner, channelId, 'for everyone');
    // The guilds stream keeps its order: once the second message is there, the first had its chance.
    const seen = await m.dispatch('MESSAGE_CREATE', (d) => d.content === 'for everyone');
    await h.dispatch('MESSAGE_CREATE', (d) => d.content === 'for everyone');
    expect(contentOf(m)).toEqual(['for some eyes only', 'for everyone']);
    expect(contentOf(h)).toEqual(['for everyone']);
    expect(seen.d).toMatchObject({ channelId, serverId, authorId: owner.id });
    expect(seen.d).not.toHaveProperty('reactions');
  });

  it('shows a member who joins as the member list does, with what others see of them', async () => {
    const [owner, joiner] = [await newUser('rtjoin'), await newUser('rtjoin2')];
    const { serverId } = await serverWith(owner);
    const o = (await identified(owner)).client;
    expect((await call('POST', `/v1/servers/${serverId}/join`, { user: joiner })).status).toBe(200);
    const added = await o.dispatch('SERVER_MEMBER_ADD', (d) => d.userId === joiner.id);
    const listed = (await call('GET', `/v1/servers/${serverId}/members`, { user: owner })).body as { userId: string }[];
    expect(added.d).toEqual(listed.find((m) => m.userId === joiner.id));
    expect(added.d).toMatchObject({ user: { username: joiner.username }, status: 'offline' });
  });

  it('shows a new conversation to a participant as their conversation list does', async () => {
    const [ann, bob] = [await newUser('rtdm'), await newUser('rtdm2')];
    const b = (await identified(bob)).client;
    const opened = await call('POST', '/v1/dm/conversations', { user: ann, body: { userIds: [bob.id] } });
    expect(opened.status).toBe(201);
    const created = await b.dispatch('DM_CONVERSATION_CREATE', (d) => d.id === opened.body.id);
    const listed = await call('GET', `/v1/dm/conversations/${opened.body.id}`, { user: bob });
    expect(created.d).toEqual(listed.body);
  });

  it('stops the events of a channel at once when an override takes the member’s access mid-session', async () => {
    const [owner, member] = [await newUser('rtown2'), await newUser('rtmem2')];
    const { serverId, channelId } = await serverWith(owner, member);
    const other = (await call('POST', `/v1/servers/${serverId}/channels`, { user: owner, body: { name: 'other', channelType: 'text' } }))
      .body;
    const { client } = await identified(member);
    await post(owner, channelId, 'before');
    await client.dispatch('MESSAGE_CREATE', (d) => d.content === 'before');

    const deny = await call('PUT', `/v1/channels/${channelId}/permissions`, {
      user: owner,
      body: { userId: member.id, allowBits: 0, denyBits: VIEW_CHANNEL },
    });
    expect(deny.status).toBe(200);
    const started = Date.now();
    await post(owner, channelId, 'after');
    await post(owner, other.id, 'marker');
    await client.dispatch('MESSAGE_CREATE', (d) => d.content === 'marker');
    expect(contentOf(client)).toEqual(['before', 'marker']);
    expect(client.dispatches('CHANNEL_OVERRIDE_UPDATE')).toHaveLength(0);
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('tells a kicked member once and sends nothing more from that server', async () => {
    const [owner, member] = [await newUser('rtkick'), await newUser('rtkicked')];
    const first = await serverWith(owner, member);
    const second = await serverWith(owner, member);
    const { client } = await identified(member);

    expect((await call('DELETE', `/v1/servers/${first.serverId}/members/${member.id}`, { user: owner })).status).toBe(204);
    const removed = await client.dispatch('SERVER_MEMBER_REMOVE');
    // Who kicked is not every member's to know (nor the kicked one's).
    expect(removed.d).toEqual({ serverId: first.serverId, userId: member.id, reason: 'kicked' });
    await post(owner, first.channelId, 'after the kick');
    await post(owner, second.channelId, 'marker');
    await client.dispatch('MESSAGE_CREATE', (d) => d.content === 'marker');
    expect(contentOf(client)).toEqual(['marker']);
  });

  it('sends DM events and friend events only to the people concerned', async () => {
    const [a, b, stranger] = [await newUser('rta'), await newUser('rtb'), await newUser('rtstranger')];
    const [ca, cb, cs] = [(await identified(a)).client, (await identified(b)).client, (await identified(stranger)).client];
    await once404sPass('POST', '/v1/friends/requests', { user: a, body: { userId: b.id } }, 201);
    const request = await cb.dispatch('FRIEND_REQUEST_CREATE');
    expect(request.d).toMatchObject({ user: { id: a.id }, direction: 'incoming' });
    await ca.dispatch('FRIEND_REQUEST_CREATE');

    const conversation = (await once404sPass('POST', '/v1/dm/conversations', { user: a, body: { userIds: [b.id] } }, 201)).body;
    const sent = await call('POST', '/v1/dm/messages', { user: a, body: { conversationId: conversation.id, content: 'psst' } });
    expect(sent.status).toBe(201);
    const dm = await cb.dispatch('DM_MESSAGE_CREATE');
    expect(dm.d).toMatchObject({ id: sent.body.id, conversationId: conversation.id, content: 'psst' });
    expect(dm.d).not.toHaveProperty('participantIds');
    // The stranger's own friend request comes after, on the same stream: then the DM had its chance.
    await once404sPass('POST', '/v1/friends/requests', { user: a, body: { userId: stranger.id } }, 201);
    await cs.dispatch('FRIEND_REQUEST_CREATE');
    // The notification of that request is the stranger's own and races the request's dispatch.
    const seen = cs.dispatches().filter((f) => f.t !== 'NOTIFICATION_CREATE');
    expect(seen.map((f) => f.t)).toEqual(['READY', 'FRIEND_REQUEST_CREATE']);
    for (const n of cs.dispatches('NOTIFICATION_CREATE')) expect(n.d).toMatchObject({ kind: 'friend_request', actorId: a.id });
  });
});

describe('typing', () => {
  it('sends TYPING_START to the others in the channel and the conversation, 204, not to the typer', async () => {
    const [owner, member] = [await newUser('rttype'), await newUser('rttype2')];
    const { serverId, channelId } = await serverWith(owner, member);
    const [co, cm] = [(await identified(owner)).client, (await identified(member)).client];
    const typed = await call('POST', `/v1/channels/${channelId}/typing`, { user: owner });
    expect(typed.status).toBe(204);
    const typing = await cm.dispatch('TYPING_START');
    expect(typing.d).toMatchObject({ channelId, serverId, userId: owner.id, timestamp: expect.any(String) });

    const conversation = (await once404sPass('POST', '/v1/dm/conversations', { user: owner, body: { userIds: [member.id] } }, 201)).body;
    expect((await call('POST', `/v1/dm/conversations/${conversation.id}/typing`, { user: member })).status).toBe(204);
    await co.dispatch('TYPING_START', (d) => d.conversationId === conversation.id && d.userId === member.id);
    expect(co.dispatches('TYPING_START').filter((f) => f.d.userId === owner.id)).toHaveLength(0);
  });

  it('refuses typing without SEND_MESSAGES (403) and in a conversation one is not in (404)', async () => {
    const [owner, member, stranger] = [await newUser('rtmute'), await newUser('rtmuted'), await newUser('rtnosy')];
    const { channelId } = await serverWith(owner, member);
    await call('PUT', `/v1/channels/${channelId}/permissions`, {
      user: owner,
      body: { userId: member.id, allowBits: 0, denyBits: SEND_MESSAGES },
    });
    const muted = await call('POST', `/v1/channels/${channelId}/typing`, { user: member });
    expect(muted.status).toBe(403);
    expect(muted.body).toEqual({ error: expect.stringContaining('SEND_MESSAGES') });
    const conversation = (await once404sPass('POST', '/v1/dm/conversations', { user: owner, body: { userIds: [member.id] } }, 201)).body;
    const nosy = await call('POST', `/v1/dm/conversations/${conversation.id}/typing`, { user: stranger });
    expect(nosy.status).toBe(404);
  });

  it('refuses typing in a 1:1 conversation across a block to either side (403), and sends TYPING_START to neither', async () => {
    const [blocker, blocked, marker] = [await newUser('rttblk'), await newUser('rttbld'), await newUser('rttmark')];
    const conversation = (await once404sPass('POST', '/v1/dm/conversations', { user: blocked, body: { userIds: [blocker.id] } }, 201)).body;
    const [cBlocker, cBlocked] = [(await identified(blocker)).client, (await identified(blocked)).client];
    expect((await call('POST', '/v1/friends/block', { user: blocker, body: { userId: blocked.id } })).status).toBe(201);
    for (const user of [blocked, blocker]) {
      const typed = await call('POST', `/v1/dm/conversations/${conversation.id}/typing`, { user });
      expect(typed.status).toBe(403);
      expect(typed.body).toEqual({ error: expect.any(String) });
    }
    // A friend request to each comes after on social's stream: a TYPING_START had its chance.
    for (const [user, client] of [
      [blocker, cBlocker],
      [blocked, cBlocked],
    ] as const) {
      await once404sPass('POST', '/v1/friends/requests', { user: marker, body: { userId: user.id } }, 201);
      await client.dispatch('FRIEND_REQUEST_CREATE');
      expect(client.dispatches('TYPING_START')).toEqual([]);
    }
  });
});

describe('revocation', () => {
  it('closes every socket of a session with 4004 within a second of logout, and refuses its resume', async () => {
    const user = await newUser('rtlogout');
    const { client, ready } = await identified(user);
    const onReplica = (await identified(user, replica.url)).client;
    const started = Date.now();
    expect((await call('POST', '/v1/auth/logout', { user, body: { refreshToken: user.refreshToken } })).status).toBe(204);
    const [closed, closedElsewhere] = await Promise.all([client.closeCode(), onReplica.closeCode()]);
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(closed.code).toBe(4004);
    expect(closedElsewhere.code).toBe(4004);

    const again = await connect(user);
    again.send({ op: 6, d: { token: user.token, sessionId: ready.sessionId, seq: 1 } });
    expect((await again.closeCode()).code).toBe(4004);
  });
});

describe('resume', () => {
  it('replays the missed dispatches in order, once, on another replica after the first is killed', async () => {
    const [owner, member] = [await newUser('rtres'), await newUser('rtres2')];
    const { channelId } = await serverWith(owner, member);
    const extra = await run.platform.startGatewayReplica(await freePort());
    const client = await connect(member, { url: extra.url });
    const ready = await client.identify(member.token);
    await post(owner, channelId, 'one');
    const one = await client.dispatch('MESSAGE_CREATE', (d) => d.content === 'one');

    await extra.stop('SIGKILL');
    await client.closeCode();
    for (const content of ['two', 'three', 'four']) await post(owner, channelId, content);

    const resumed = await connect(member);
    resumed.send({ op: 6, d: { token: member.token, sessionId: ready.sessionId, seq: one.s } });
    await resumed.dispatch('RESUMED');
    await post(owner, channelId, 'five');
    await resumed.dispatch('MESSAGE_CREATE', (d) => d.content === 'five');
    const seqs = resumed.dispatches().map((f) => f.s as number);
    expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => (one.s as number) + 1 + i));
    // What was dispatched before the resume is replayed before RESUMED; a post still on its way when
    // the client resumed comes after it. Either way: every message once, in order.
    expect(resumed.dispatches('MESSAGE_CREATE').map((f) => f.d.content)).toEqual(['two', 'three', 'four', 'five']);
    expect(resumed.dispatches('RESUMED')).toHaveLength(1);
    expect(resumed.dispatches('RESUMED')[0]?.d).toEqual({ replayed: resumed.dispatches().findIndex((f) => f.t === 'RESUMED') });
  });

  it('tells the sockets of a replica that shuts down to RECONNECT, closes them with 1012, and a RESUME elsewhere replays what they missed', async () => {
    const [owner, member] = [await newUser('rtdown'), await newUser('rtdown2')];
    const { channelId } = await serverWith(owner, member);
    const leaving = await run.platform.startGatewayReplica(await freePort());
    const client = await connect(member, { url: leaving.url });
    const ready = await client.identify(member.token);
    await post(owner, channelId, 'one');
    const one = await client.dispatch('MESSAGE_CREATE', (d) => d.content === 'one');

    await leaving.stop('SIGTERM');
    expect(await client.closeCode()).toEqual({ code: 1012, reason: 'Reconnect' });
    expect(client.frames.at(-1)).toEqual({ op: 7, d: null, s: null, t: null });
    for (const content of ['two', 'three']) await post(owner, channelId, content);

    const resumed = await connect(member);
    resumed.send({ op: 6, d: { token: member.token, sessionId: ready.sessionId, seq: one.s } });
    await resumed.dispatch('RESUMED');
    await post(owner, channelId, 'four');
    await resumed.dispatch('MESSAGE_CREATE', (d) => d.content === 'four');
    expect(contentOf(resumed)).toEqual(['two', 'three', 'four']);
    const seqs = resumed.dispatches().map((f) => f.s as number);
    expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => (one.s as number) + 1 + i));
  });

  it('hands a live session to a RESUME on another replica: the old socket closes with 1000 and friends never see the user offline', async () => {
    const [watcher, user] = [await newUser('rtwatch3'), await newUser('rtmover')];
    await befriend(watcher, user);
    const { client: w } = await identified(watcher);
    const { client: old, ready } = await identified(user);
    await w.dispatch('PRESENCE_UPDATE', (d) => d.userId === user.id && d.status === 'online');

    const moved = await connect(user, { url: replica.url });
    moved.send({ op: 6, d: { token: user.token, sessionId: ready.sessionId, seq: old.lastSeq() } });
    await moved.dispatch('RESUMED');
    expect((await old.closeCode()).code).toBe(1000);
    // A later change reaches the watcher after anything the takeover announced.
    expect((await call('PATCH', '/v1/users/@me/presence', { user, body: { status: 'dnd' } })).status).toBe(200);
    await w.dispatch('PRESENCE_UPDATE', (d) => d.userId === user.id && d.status === 'dnd');
    const updates = w.dispatches('PRESENCE_UPDATE').filter((f) => f.d.userId === user.id);
    expect(updates.map((f) => f.d.status)).toEqual(['online', 'dnd']);
  });

  it('gives a dropped session to one of two RESUMEs sent at once: the other closes with 1000, the survivor gets each dispatch once', async () => {
    const [owner, member] = [await newUser('rttwin'), await newUser('rttwin2')];
    const { channelId } = await serverWith(owner, member);
    const { client: first, ready } = await identified(member);
    first.close();
    await first.closed;
    await post(owner, channelId, 'while away');

    const [a, b] = [await connect(member), await connect(member, { url: replica.url })];
    const seq = first.lastSeq() as number;
    for (const c of [a, b]) c.send({ op: 6, d: { token: member.token, sessionId: ready.sessionId, seq } });
    const loser = await Promise.race([a.closed.then(() => a), b.closed.then(() => b)]);
    expect((await loser.closed).code).toBe(1000);
    const survivor = loser === a ? b : a;
    await post(owner, channelId, 'after');
    await survivor.dispatch('MESSAGE_CREATE', (d) => d.content === 'after');
    expect(contentOf(survivor)).toEqual(['while away', 'after']);
    // The loser's RESUMED is a numbered dispatch of the session too: the survivor may replay it, once.
    const seqs = survivor.dispatches().map((f) => f.s as number);
    expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => seq + 1 + i));
  });

  it('refuses a resume after the window with INVALID_SESSION {resumable: false}', async () => {
    const user = await newUser('rtlate');
    const { client, ready } = await identified(user);
    client.close();
    await client.closed;
    // The window is configured short for this file (GATEWAY_RESUME_WINDOW_MS); the session store's own test uses an injected clock.
    await new Promise((resolve) => setTimeout(resolve, RESUME_WINDOW_MS + 500));
    const late = await connect(user);
    late.send({ op: 6, d: { token: user.token, sessionId: ready.sessionId, seq: 1 } });
    expect(await late.next((f) => f.op === 9)).toEqual({ op: 9, d: { resumable: false }, s: null, t: null });
  });
});

describe('presence', () => {
  it('shows a friend online while any session is connected on any replica, offline after the last', async () => {
    const [watcher, friend] = [await newUser('rtwatch'), await newUser('rtfriend')];
    await befriend(watcher, friend);
    const { client: w } = await identified(watcher);
    const updates = () =>
      w
        .dispatches('PRESENCE_UPDATE')
        .filter((f) => f.d.userId === friend.id)
        .map((f) => `${f.d.status}:${f.d.customStatus}`);

    const first = (await identified(friend)).client;
    await w.dispatch('PRESENCE_UPDATE', (d) => d.userId === friend.id && d.status === 'online');
    const second = (await identified(friend, replica.url)).client;
    first.close();
    await first.closed;
    // A change that is still shown as online proves the first close did not show offline.
    expect((await call('PATCH', '/v1/users/@me/presence', { user: friend, body: { status: 'dnd', customStatus: 'busy' } })).status).toBe(
      200,
    );
    await w.dispatch('PRESENCE_UPDATE', (d) => d.userId === friend.id && d.status === 'dnd');
    expect(updates()).toEqual(['online:', 'dnd:busy']);
    const listed = async () =>
      ((await call('GET', '/v1/friends', { user: watcher })).body as { user: { id: string; status: string } }[]).find(
        (f) => f.user.id === friend.id,
      )?.user.status;
    expect(await listed()).toBe('dnd');

    second.close();
    await w.dispatch('PRESENCE_UPDATE', (d) => d.userId === friend.id && d.status === 'offline');
    expect(updates()).toEqual(['online:', 'dnd:busy', 'offline:']);
    expect(await listed()).toBe('offline');
  });

  it('shows an invisible user offline while connected', async () => {
    const [watcher, friend] = [await newUser('rtwatch2'), await newUser('rtghost')];
    await befriend(watcher, friend);
    const { client: w } = await identified(watcher);
    await identified(friend);
    await w.dispatch('PRESENCE_UPDATE', (d) => d.userId === friend.id && d.status === 'online');
    const res = await call('PATCH', '/v1/users/@me/presence', { user: friend, body: { status: 'invisible' } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: friend.id, status: 'invisible' });
    await w.dispatch('PRESENCE_UPDATE', (d) => d.userId === friend.id && d.status === 'offline');
  });

  it('sends a friend who is also a co-member one PRESENCE_UPDATE per change, none for a repeated choice, none to the user, who gets its account', async () => {
    const [watcher, user] = [await newUser('rtonce'), await newUser('rtonce2')];
    await befriend(watcher, user);
    await serverWith(user, watcher);
    const { client: w } = await identified(watcher);
    const own = [(await identified(user)).client];
    await w.dispatch('PRESENCE_UPDATE', (d) => d.userId === user.id && d.status === 'online');
    own.push((await identified(user, replica.url)).client);
    for (const body of [{ status: 'dnd', customStatus: 'busy' }, { status: 'dnd', customStatus: 'busy' }, { status: 'idle' }]) {
      expect((await call('PATCH', '/v1/users/@me/presence', { user, body })).status).toBe(200);
    }
    await w.dispatch('PRESENCE_UPDATE', (d) => d.userId === user.id && d.status === 'idle');
    // The profile change goes to the user's sessions after the presence changes, on auth's stream.
    expect((await call('PATCH', '/v1/users/@me', { user, body: { displayName: 'Seen once' } })).status).toBe(200);
    await w.dispatch('USER_UPDATE', (d) => d.id === user.id);
    // Friends get the public fields; the user's own sessions the account, once per change.
    expect(w.dispatches('USER_UPDATE').map((f) => f.d)).toEqual([expect.not.objectContaining({ email: expect.anything() })]);
    for (const client of own) {
      await client.dispatch('USER_UPDATE', (d) => d.displayName === 'Seen once');
      const accounts = client.dispatches('USER_UPDATE').map((f) => f.d);
      expect(accounts).toHaveLength(3);
      expect(accounts.at(-1)).toMatchObject({
        id: user.id,
        displayName: 'Seen once',
        status: 'idle',
        customStatus: 'busy',
        email: expect.any(String),
      });
    }
    const updates = w.dispatches('PRESENCE_UPDATE').filter((f) => f.d.userId === user.id);
    expect(updates.map((f) => `${f.d.status}:${f.d.customStatus}`)).toEqual(['online:', 'dnd:busy', 'idle:busy']);
    expect(own.flatMap((c) => c.dispatches('PRESENCE_UPDATE')).filter((f) => f.d.userId === user.id)).toEqual([]);
  });

  it('closes only the sockets of the login that logs out (4004), and shows the user offline once the last login is out', async () => {
    const [watcher, user] = [await newUser('rtlogw'), await newUser('rtlogu')];
    await befriend(watcher, user);
    const { client: w } = await identified(watcher);
    const login = await call('POST', '/v1/auth/login', { body: { login: user.username, password: PASSWORD } });
    expect(login.status).toBe(200);
    const other: User = { ...user, token: login.body.token, refreshToken: login.body.refreshToken };
    const { client: first } = await identified(user);
    const { client: second } = await identified(other, replica.url);
    await w.dispatch('PRESENCE_UPDATE', (d) => d.userId === user.id && d.status === 'online');
    const statuses = () =>
      w
        .dispatches('PRESENCE_UPDATE')
        .filter((f) => f.d.userId === user.id)
        .map((f) => f.d.status);

    expect((await call('POST', '/v1/auth/logout', { user, body: { refreshToken: user.refreshToken } })).status).toBe(204);
    expect((await first.closeCode()).code).toBe(4004);
    // Still connected through the other login: its change is shown, and nothing offline before it.
    expect((await call('PATCH', '/v1/users/@me/presence', { user: other, body: { status: 'dnd' } })).status).toBe(200);
    await w.dispatch('PRESENCE_UPDATE', (d) => d.userId === user.id && d.status === 'dnd');
    expect(statuses()).toEqual(['online', 'dnd']);
    expect(second.ws.readyState).toBe(second.ws.OPEN);

    expect((await call('POST', '/v1/auth/logout', { user: other, body: { refreshToken: other.refreshToken } })).status).toBe(204);
    expect((await second.closeCode()).code).toBe(4004);
    await w.dispatch('PRESENCE_UPDATE', (d) => d.userId === user.id && d.status === 'offline');
    expect(statuses()).toEqual(['online', 'dnd', 'offline']);
  });
});

/** Polls a REST read until `done` holds (another process applies an event in its own time); answers the last value. */
async function eventually<T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  return vi.waitFor(
    async () => {
      const value = await read();
      if (!done(value)) throw new Error(`not yet: ${JSON.stringify(value)}`);
      return value;
    },
    { timeout: 10_000, interval: 50 },
  );
}

const statusIn = (list: { user: { id: string; status: string } }[], id: string) => list.find((e) => e.user.id === id)?.user.status;

describe('seen status in every list', () => {
  it('shows the seen status of friends, requests, conversation participants and members, and offline after the last session', async () => {
    const [me, subject, asker] = [await newUser('rtlists'), await newUser('rtseen'), await newUser('rtasker')];
    await befriend(me, subject);
    await once404sPass('POST', '/v1/friends/requests', { user: asker, body: { userId: subject.id } }, 201);
    const conversation = (await once404sPass('POST', '/v1/dm/conversations', { user: me, body: { userIds: [subject.id] } }, 201)).body;
    // The asker shares a server with the subject: a stranger's request list would show them offline.
    const { serverId } = await serverWith(me, subject, asker);
    const lists = async () => ({
      friend: statusIn((await call('GET', '/v1/friends', { user: me })).body, subject.id),
      request: statusIn((await call('GET', '/v1/friends/requests', { user: asker })).body, subject.id),
      participant: (await call('GET', `/v1/dm/conversations/${conversation.id}`, { user: me })).body.participants.find(
        (p: { id: string }) => p.id === subject.id,
      ).status,
      listed: (await call('GET', '/v1/dm/conversations', { user: me })).body
        .find((c: { id: string }) => c.id === conversation.id)
        .participants.find((p: { id: string }) => p.id === subject.id).status,
      member: (await call('GET', `/v1/servers/${serverId}/members`, { user: me })).body.find(
        (m: { userId: string }) => m.userId === subject.id,
      ).status,
    });
    const everywhere = (status: string) => ({ friend: status, request: status, participant: status, listed: status, member: status });
    const all = (status: string) => (l: Record<string, string | undefined>) => Object.values(l).every((s) => s === status);
    expect(await lists()).toEqual(everywhere('offline'));

    const first = (await identified(subject)).client;
    const second = (await identified(subject, replica.url)).client;
    expect(await lists()).toEqual(everywhere('online'));
    expect((await call('PATCH', '/v1/users/@me/presence', { user: subject, body: { status: 'idle' } })).status).toBe(200);
    expect(await eventually(lists, all('idle'))).toEqual(everywhere('idle'));
    // The caller's own entry in the conversation shows them as others see them too: not connected.
    const mine = (await call('GET', `/v1/dm/conversations/${conversation.id}`, { user: me })).body.participants;
    expect(mine.find((p: { id: string }) => p.id === me.id).status).toBe('offline');

    first.close();
    await first.closed;
    expect(await lists()).toEqual(everywhere('idle'));
    second.close();
    expect(await eventually(lists, all('offline'))).toEqual(everywhere('offline'));
  });
});

describe('friend and block dispatches', () => {
  it('carry the record each side’s REST list holds, the other user’s status as others see it', async () => {
    const [a, b] = [await newUser('rtreca'), await newUser('rtrecb')];
    const [ca, cb] = [(await identified(a)).client, (await identified(b)).client];
    await once404sPass('POST', '/v1/friends/requests', { user: a, body: { userId: b.id } }, 201);
    const incoming = await cb.dispatch('FRIEND_REQUEST_CREATE');
    const outgoing = await ca.dispatch('FRIEND_REQUEST_CREATE');
    expect(incoming.d).toEqual((await call('GET', '/v1/friends/requests', { user: b })).body[0]);
    expect(outgoing.d).toEqual((await call('GET', '/v1/friends/requests', { user: a })).body[0]);
    // Strangers until accepted: each shows the other offline, as the socket's presence does.
    expect(incoming.d).toMatchObject({ user: { id: a.id, username: expect.any(String), status: 'offline' }, direction: 'incoming' });
    expect(outgoing.d).toMatchObject({ user: { id: b.id, status: 'offline' }, direction: 'outgoing' });

    // Applied by the gateway before the acceptance: both come in order on social's stream.
    expect((await call('PUT', '/v1/users/@me/activity', { user: b, body: { name: 'Chess' } })).status).toBe(200);
    expect((await call('POST', '/v1/friends/accept', { user: b, body: { userId: a.id } })).status).toBe(200);
    const accepted = await ca.dispatch('FRIEND_REQUEST_ACCEPT');
    expect(accepted.d).toEqual((await call('GET', '/v1/friends', { user: a })).body[0]);
    expect(accepted.d).toMatchObject({ user: { id: b.id, status: 'online' }, activity: { name: 'Chess' }, createdAt: expect.any(String) });
    expect((await cb.dispatch('FRIEND_REQUEST_ACCEPT')).d).toEqual((await call('GET', '/v1/friends', { user: b })).body[0]);

    expect((await call('POST', '/v1/friends/block', { user: a, body: { userId: b.id } })).status).toBe(201);
    const blocked = await ca.dispatch('BLOCK_CREATE');
    expect(blocked.d).toEqual((await call('GET', '/v1/friends/blocked', { user: a })).body[0]);
    // No longer friends, and sharing no server: blocked, b is a stranger again.
    expect(blocked.d).toMatchObject({ user: { id: b.id, status: 'offline' } });
    expect((await ca.dispatch('FRIEND_REMOVE')).d).toMatchObject({ user: { id: b.id }, relation: 'friend', reason: 'blocked' });
    // The block is told to the blocker only: to the one blocked it is an unfriend, from a stranger now.
    expect((await cb.dispatch('FRIEND_REMOVE')).d).toEqual({
      user: expect.objectContaining({ id: a.id, status: 'offline' }),
      relation: 'friend',
      reason: 'unfriended',
    });
    expect((await call('DELETE', `/v1/friends/block/${b.id}`, { user: a })).status).toBe(204);
    expect((await ca.dispatch('BLOCK_DELETE')).d).toEqual(blocked.d);
    expect(cb.dispatches().filter((f) => f.t?.startsWith('BLOCK_'))).toEqual([]);
  });
});

describe('blocks that end a friend request', () => {
  it('tell the other side its request was declined, or the blocker’s cancelled, never that it was a block', async () => {
    const [requester, blocker, asker, target] = [
      await newUser('rtreq'),
      await newUser('rtblk'),
      await newUser('rtask'),
      await newUser('rttgt'),
    ];
    const [cRequester, cBlocker, cAsker, cTarget] = [
      (await identified(requester)).client,
      (await identified(blocker)).client,
      (await identified(asker)).client,
      (await identified(target)).client,
    ];
    await once404sPass('POST', '/v1/friends/requests', { user: requester, body: { userId: blocker.id } }, 201);
    await cRequester.dispatch('FRIEND_REQUEST_CREATE');
    expect((await call('POST', '/v1/friends/block', { user: blocker, body: { userId: requester.id } })).status).toBe(201);
    expect((await cRequester.dispatch('FRIEND_REMOVE')).d).toMatchObject({
      user: { id: blocker.id },
      relation: 'request',
      reason: 'declined',
    });
    expect((await cBlocker.dispatch('FRIEND_REMOVE')).d).toMatchObject({
      user: { id: requester.id },
      relation: 'request',
      reason: 'blocked',
    });

    await once404sPass('POST', '/v1/friends/requests', { user: asker, body: { userId: target.id } }, 201);
    await cTarget.dispatch('FRIEND_REQUEST_CREATE');
    expect((await call('POST', '/v1/friends/block', { user: asker, body: { userId: target.id } })).status).toBe(201);
    expect((await cTarget.dispatch('FRIEND_REMOVE')).d).toMatchObject({ user: { id: asker.id }, relation: 'request', reason: 'cancelled' });
    expect((await cAsker.dispatch('FRIEND_REMOVE')).d).toMatchObject({ user: { id: target.id }, relation: 'request', reason: 'blocked' });
  });
});

describe('call dispatches', () => {
  it('send CALL_CREATE, CALL_UPDATE and CALL_DELETE (the call as REST shows it) to the participants only', async () => {
    const [caller, callee, stranger] = [await newUser('rtcaller'), await newUser('rtcallee'), await newUser('rtcallx')];
    const [cCaller, cCallee, cStranger] = [
      (await identified(caller)).client,
      (await identified(callee)).client,
      (await identified(stranger)).client,
    ];
    const conversation = (await once404sPass('POST', '/v1/dm/conversations', { user: caller, body: { userIds: [callee.id] } }, 201)).body;
    const ring = await call('POST', `/v1/dm/conversations/${conversation.id}/call`, { user: caller });
    expect(ring.status).toBe(201);
    const rang = await cCallee.dispatch('CALL_CREATE');
    expect(rang.d).toMatchObject({ id: ring.body.id, conversationId: conversation.id, initiatorId: caller.id, state: 'ringing' });
    expect((await cCaller.dispatch('CALL_CREATE')).d).toEqual(rang.d);

    expect((await call('POST', `/v1/calls/${ring.body.id}/accept`, { user: callee })).status).toBe(200);
    const answered = await cCaller.dispatch('CALL_UPDATE', (d) => d.state === 'active');
    expect(answered.d).toMatchObject({ id: ring.body.id, answeredAt: expect.any(String) });
    expect(answered.d.participants).toEqual(expect.arrayContaining([{ userId: callee.id, state: 'joined' }]));

    for (const user of [caller, callee]) expect((await call('POST', `/v1/calls/${ring.body.id}/leave`, { user })).status).toBe(200);
    const ended = await cCallee.dispatch('CALL_DELETE');
    expect(ended.d).toMatchObject({ id: ring.body.id, state: 'ended', endReason: 'completed' });
    expect(ended.d).toEqual((await call('GET', `/v1/calls/${ring.body.id}`, { user: callee })).body);
    expect((await cCaller.dispatch('CALL_DELETE')).d).toEqual(ended.d);
    // A friend request to the stranger comes after on social's stream: the call's events had their chance.
    await once404sPass('POST', '/v1/friends/requests', { user: caller, body: { userId: stranger.id } }, 201);
    await cStranger.dispatch('FRIEND_REQUEST_CREATE');
    expect(cStranger.dispatches().filter((f) => f.t?.startsWith('CALL_'))).toEqual([]);
  });
});

describe('KEYS_UPDATE', () => {
  it('goes to friends, conversation partners and co-members of the user, not to strangers nor across a block', async () => {
    const owner = await newUser('rtkeys');
    const [friend, partner, member, blocked, stranger, marker] = [
      await newUser('rtkfriend'),
      await newUser('rtkpartner'),
      await newUser('rtkmember'),
      await newUser('rtkblocked'),
      await newUser('rtkstranger'),
      await newUser('rtkmarker'),
    ];
    await befriend(owner, friend);
    await once404sPass('POST', '/v1/dm/conversations', { user: partner, body: { userIds: [owner.id] } }, 201);
    await serverWith(owner, member, blocked);
    await once404sPass('POST', '/v1/friends/block', { user: owner, body: { userId: blocked.id } }, 201);
    const sockets = await Promise.all([owner, friend, partner, member, blocked, stranger].map(async (u) => (await identified(u)).client));

    const device = deviceKeys();
    expect((await call('PUT', '/v1/keys/devices/laptop', { user: owner, body: device })).status).toBe(201);
    const expected = { userId: owner.id, deviceId: 'laptop', change: 'added', identityKey: device.identityKey };
    for (const socket of sockets.slice(0, 4)) expect((await socket.dispatch('KEYS_UPDATE')).d).toEqual(expected);
    // Later events of the same stream reach the two who must not get it: by then it had its chance.
    for (const [user, socket] of [
      [blocked, sockets[4]],
      [stranger, sockets[5]],
    ] as const) {
      await once404sPass('POST', '/v1/friends/requests', { user: marker, body: { userId: user.id } }, 201);
      await socket?.dispatch('FRIEND_REQUEST_CREATE');
      expect(socket?.dispatches('KEYS_UPDATE')).toEqual([]);
    }
  });
});

describe('activities in presence', () => {
  it('shows the activity in PRESENCE_UPDATE and the lists, and ends it when the last session closes on any replica', async () => {
    const [watcher, player] = [await newUser('rtwatcher'), await newUser('rtplayer')];
    await befriend(watcher, player);
    const { serverId } = await serverWith(watcher, player);
    const { client: w } = await identified(watcher);
    const first = (await identified(player)).client;
    const second = (await identified(player, replica.url)).client;
    const set = await call('PUT', '/v1/users/@me/activity', { user: player, body: { name: 'Go' } });
    expect(set.status).toBe(200);
    const update = await w.dispatch('PRESENCE_UPDATE', (d) => d.userId === player.id && d.activity !== null);
    expect(update.d).toEqual({ userId: player.id, status: 'online', customStatus: '', activity: set.body });
    const shown = async () => ({
      friend: (await call('GET', '/v1/friends', { user: watcher })).body.find((f: { user: { id: string } }) => f.user.id === player.id),
      member: (await call('GET', `/v1/servers/${serverId}/members`, { user: watcher })).body.find(
        (m: { userId: string }) => m.userId === player.id,
      ),
    });
    const both = await eventually(shown, (s) => s.member.activity !== undefined);
    expect(both.friend).toMatchObject({ user: { status: 'online' }, activity: set.body });
    expect(both.member).toMatchObject({ status: 'online', activity: set.body });

    // One session closing (the other is on another replica) ends nothing.
    first.close();
    await first.closed;
    expect((await call('PATCH', '/v1/users/@me/presence', { user: player, body: { status: 'dnd' } })).status).toBe(200);
    const still = await w.dispatch('PRESENCE_UPDATE', (d) => d.userId === player.id && d.status === 'dnd');
    expect(still.d.activity).toEqual(set.body);

    second.close();
    const offline = await w.dispatch('PRESENCE_UPDATE', (d) => d.userId === player.id && d.status === 'offline');
    expect(offline.d).toEqual({ userId: player.id, status: 'offline', customStatus: '', activity: null });
    // Social cleared it (the gateway told it once): back online, nothing is played any more.
    const again = (await identified(player)).client;
    const after = await eventually(shown, (s) => s.member.status === 'dnd' && s.member.activity === undefined && !s.friend.activity);
    expect(after.friend).toMatchObject({ user: { status: 'dnd' } });
    expect(after.friend).not.toHaveProperty('activity');
    // Whichever came first (the reconnection or the clearing), the last word is: dnd, nothing played.
    const last = () =>
      w
        .dispatches('PRESENCE_UPDATE')
        .filter((f) => f.d.userId === player.id)
        .at(-1)?.d;
    expect(
      await eventually(
        async () => last(),
        (d) => d !== still.d && d.status === 'dnd' && d.activity === null,
      ),
    ).toEqual({
      userId: player.id,
      status: 'dnd',
      customStatus: '',
      activity: null,
    });
    again.close();
  });
});

describe('GET /v1/asyncapi.json', () => {
  it('answers the AsyncAPI document of the socket with every dispatch of the contracts, linked from the docs page', async () => {
    const res = await call('GET', '/v1/asyncapi.json');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ asyncapi: '3.0.0', channels: { socket: { address: '/v1/gateway/ws' } } });
    for (const name of ['READY', 'RESUMED', ...Object.values(DISPATCH_NAMES)]) {
      expect(res.body.components.messages[name]?.payload.properties.t, name).toEqual({ type: 'string', const: name });
    }
    const page = await fetch(`${gateway}/v1/docs`, { headers: { 'x-forwarded-for': randomIp() } });
    expect(await page.text()).toContain('href="/v1/asyncapi.json"');
  });
});
