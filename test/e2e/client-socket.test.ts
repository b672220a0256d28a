import { randomBytes } from 'node:crypto';
import { type ChatClient, createClient, type Dispatch, type SocketStatus } from '@chat/client';
import { startTcpProxy, type TcpProxy, until } from '@chat/testkit';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { gateway, randomIp } from './helpers.ts';

// The socket of @chat/client against the real gateway: identify, dispatches typed by the contracts,
// heartbeats, and a resume after the link is cut (by a TCP proxy between the client and the
// gateway) that delivers what was missed once and in order.

const opened: ChatClient[] = [];
let proxy: TcpProxy;

beforeAll(async () => {
  const target = new URL(gateway);
  proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port) });
});

afterEach(() => {
  for (const client of opened.splice(0)) client.socket.close();
});

afterAll(async () => {
  await proxy?.close();
});

/** A client (of its own client IP) with a registered user; `baseUrl` may be the proxy. */
async function signedUp(baseUrl = gateway): Promise<{ client: ChatClient; userId: string }> {
  // Short reconnect waits: the proxy refuses every attempt while the link is cut.
  const client = createClient({
    baseUrl,
    headers: { 'x-forwarded-for': randomIp() },
    socket: { reconnectDelayMs: 50, maxReconnectDelayMs: 200 },
  });
  const username = `cs_${randomBytes(5).toString('hex')}`;
  const registered = await client.auth.register({
    body: { username, email: `${username}@example.test`, password: `pw-${randomBytes(8).toString('hex')}` },
  });
  if (!('user' in registered)) throw new Error('email verification is on in the e2e platform');
  opened.push(client);
  return { client, userId: registered.user.id };
}

/** A server of `owner` with `member` in it, and its text channel. */
async function channelOf(owner: ChatClient, member: ChatClient): Promise<{ serverId: string; channelId: string }> {
  const server = await owner.servers.createServer({ body: { name: 'Socket client', isPublic: true } });
  await member.servers.joinServer({ params: { serverId: server.id } });
  const channels = await owner.servers.listChannels({ params: { serverId: server.id } });
  const text = channels.find((c) => c.channelType === 'text');
  if (!text) throw new Error('a new server has a text channel');
  return { serverId: server.id, channelId: text.id };
}

/** Every MESSAGE_CREATE the socket hands to its listener, in the order it did. */
function recordMessages(client: ChatClient): Dispatch<'MESSAGE_CREATE'>[] {
  const seen: Dispatch<'MESSAGE_CREATE'>[] = [];
  client.socket.on('MESSAGE_CREATE', (_message, dispatch) => seen.push(dispatch));
  return seen;
}

describe('the socket of @chat/client', () => {
  it('identifies, gets READY with its servers, and hands over MESSAGE_CREATE typed by the contract', async () => {
    const [owner, watcher] = await Promise.all([signedUp(), signedUp()]);
    const { serverId, channelId } = await channelOf(owner.client, watcher.client);
    const seen = recordMessages(watcher.client);
    const readies: Dispatch<'READY'>[] = [];
    watcher.client.socket.on('READY', (_ready, dispatch) => readies.push(dispatch));

    const ready = await watcher.client.socket.connect();
    expect(ready.user.id).toBe(watcher.userId);
    expect(ready.serverIds).toContain(serverId);
    expect(ready.sessionId).toBe(watcher.client.socket.sessionId);
    expect(watcher.client.socket.status).toBe('ready');
    // READY is dispatch 1; what was dispatched while it was made (the join's events) may follow at once.
    expect(readies.map((r) => r.s)).toEqual([1]);

    const posted = await owner.client.messages.sendMessage({ params: { channelId }, body: { content: 'to the socket' } });
    await until(async () => seen.length > 0, { what: 'MESSAGE_CREATE reaches the socket' });
    expect(seen).toHaveLength(1);
    const [dispatch] = seen;
    expect(dispatch?.t).toBe('MESSAGE_CREATE');
    expect(dispatch?.s).toBeGreaterThan(1);
    // The payload is the record REST answered.
    expect(dispatch?.d).toMatchObject({ id: posted.id, channelId, authorId: owner.userId, content: 'to the socket' });
    expect(watcher.client.socket.seq).toBe(dispatch?.s);
  });

  it('heartbeats and gets HEARTBEAT_ACK', async () => {
    const { client } = await signedUp();
    await client.socket.connect();
    const latency = await client.socket.heartbeat();
    expect(latency).toBeGreaterThanOrEqual(0);
    expect(client.socket.latencyMs).toBe(latency);
    expect(client.socket.status).toBe('ready');
  });

  it('resumes after the link is cut and receives what was posted meanwhile exactly once, in order', async () => {
    const owner = await signedUp();
    // The watcher reaches the gateway through the proxy only (GET /v1/gateway answers the proxy's address).
    const watcher = await signedUp(proxy.url('http'));
    const { channelId } = await channelOf(owner.client, watcher.client);
    const seen = recordMessages(watcher.client);
    const statuses: SocketStatus[] = [];
    watcher.client.socket.onStatus((status) => statuses.push(status));
    const resumed: Dispatch<'RESUMED'>[] = [];
    watcher.client.socket.on('RESUMED', (_d, dispatch) => resumed.push(dispatch));
    const readies: string[] = [];
    watcher.client.socket.on('READY', (ready) => readies.push(ready.sessionId));
    const post = (content: string) => owner.client.messages.sendMessage({ params: { channelId }, body: { content } });

    const { sessionId } = await watcher.client.socket.connect();
    const before = await post('before the cut');
    await until(async () => seen.length === 1, { what: 'the first message arrives' });

    proxy.cut();
    const missed: string[] = [];
    try {
      await until(async () => watcher.client.socket.status === 'reconnecting', { what: 'the client sees the drop' });
      for (const content of ['missed 1', 'missed 2', 'missed 3']) missed.push((await post(content)).id);
    } finally {
      proxy.restore();
    }
    await until(async () => resumed.length === 1 && seen.length >= 4, { what: 'the client resumes and gets the missed messages' });
    const after = await post('after the resume');
    await until(async () => seen.length >= 5, { what: 'the live stream goes on after the resume' });

    expect(seen.map((d) => d.d.id)).toEqual([before.id, ...missed, after.id]);
    expect(seen.map((d) => d.d.content)).toEqual(['before the cut', 'missed 1', 'missed 2', 'missed 3', 'after the resume']);
    const seqs = seen.map((d) => d.s);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(new Set(seqs).size).toBe(seqs.length);
    // The same session, resumed (not a new READY), with the three dispatches replayed.
    expect(watcher.client.socket.sessionId).toBe(sessionId);
    expect(readies).toEqual([sessionId]);
    expect(resumed[0]?.d).toEqual({ replayed: 3 });
    expect(statuses).toEqual(expect.arrayContaining(['reconnecting', 'resuming', 'ready']));
    expect(watcher.client.socket.status).toBe('ready');
  });

  it('identifies afresh when the gateway answers INVALID_SESSION to its resume', async () => {
    const { client, userId } = await signedUp();
    const readies: string[] = [];
    client.socket.on('READY', (ready) => readies.push(ready.sessionId));
    const first = await client.socket.connect();

    // A session the gateway does not know (as after the resume window): INVALID_SESSION {resumable: false}.
    const unknown = crypto.randomUUID();
    client.socket.sessionId = unknown;
    client.socket.reconnect();
    await until(async () => readies.length === 2, { what: 'a second READY after the refused resume' });

    expect(readies[0]).toBe(first.sessionId);
    expect(readies[1]).not.toBe(unknown);
    expect(readies[1]).not.toBe(first.sessionId);
    expect(client.socket.sessionId).toBe(readies[1]);
    expect(client.socket.status).toBe('ready');
    // The new session is live: the user's own profile change reaches it.
    const updates: string[] = [];
    client.socket.on('USER_UPDATE', (user) => updates.push(`${user.id} ${user.displayName}`));
    await client.auth.updateMe({ body: { displayName: 'After a new identify' } });
    await until(async () => updates.length > 0, { what: 'USER_UPDATE on the new session' });
    expect(updates).toEqual([`${userId} After a new identify`]);
  });
  it('ends its session on close(): a later connect() identifies afresh and resolves with a new READY', async () => {
    const { client } = await signedUp();
    const readies: string[] = [];
    client.socket.on('READY', (ready) => readies.push(ready.sessionId));
    const first = await client.socket.connect();
    client.socket.close();
    expect(client.socket.status).toBe('closed');
    const statuses: SocketStatus[] = [];
    client.socket.onStatus((status) => statuses.push(status));

    const second = await client.socket.connect();

    expect(second.sessionId).not.toBe(first.sessionId);
    expect(readies).toEqual([first.sessionId, second.sessionId]);
    // Identified, never resumed the session that close() ended.
    expect(statuses).toEqual(['connecting', 'identifying', 'ready']);
  }, 10_000);
});
