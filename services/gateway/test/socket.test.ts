import { randomUUID } from 'node:crypto';
import { get, type IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { STREAMS, VOICE_SUBJECTS } from '@chat/contracts';
import { type GatewayClient, liveVoiceState, startTcpProxy } from '@chat/testkit';
import { afterAll, describe, expect, inject, it, vi } from 'vitest';
import WebSocket from 'ws';
import { rateSubject } from '../src/domain/client-ip.ts';
import * as socketMetrics from '../src/domain/socket-metrics.ts';
import { realtimeKeyPrefix } from '../src/realtime.ts';
import { openSocket, startSocketGateway } from './socket-harness.ts';

/**
 * The real-time socket of one replica, through a real port, with real Redis and NATS: slow
 * clients, revocations (memory first, the replaying list, resumes), who sees voice states, and the
 * rate headers of the upgrade. The whole platform's socket is tested in test/e2e/realtime.test.ts.
 */

const BOUND = 256 * 1024;
const gw = await startSocketGateway({ env: { GATEWAY_MAX_BUFFERED_BYTES: String(BOUND), GATEWAY_REPLAY_BUFFER: '2000' } });
const prefix = realtimeKeyPrefix(gw.config.BUS_NAMESPACE);
afterAll(() => gw.close());

/** A login of the user: its token session and an access token of it. */
async function login(userId = randomUUID()) {
  const sessionId = randomUUID();
  return { userId, sessionId, token: await gw.issuer.sign(userId, { sessionId }) };
}

async function identified(token: string) {
  const client = await openSocket(gw.baseUrl);
  const ready = await client.identify(token);
  return { client, gatewaySessionId: ready.sessionId };
}

/** Closes the client's socket and waits until the gateway has detached its session (resumable). */
async function dropped(client: GatewayClient, gatewaySessionId: string) {
  client.ws.close(4900);
  await client.closed;
  await expect.poll(() => gw.redis.hget(`${prefix}s:${gatewaySessionId}`, 'node')).toBe('');
}

const slowClosures = async () => (await socketMetrics.slowClients.get()).values[0]?.value ?? 0;

describe('a client that stops reading', () => {
  it('is closed with 4000 once more than GATEWAY_MAX_BUFFERED_BYTES waits for it, is held to that, and resumes what it missed', async () => {
    const { token } = await login();
    const { client, gatewaySessionId } = await identified(token);
    const serverSide = gw.serverSockets.at(-1) as Socket;
    const before = await slowClosures();
    // It reads nothing more from TCP, and keeps heartbeating.
    (client.ws as unknown as { _socket: Socket })._socket.pause();
    let most = 0;
    const sampler = setInterval(() => {
      most = Math.max(most, serverSide.writableLength);
    }, 2);
    const payload = JSON.stringify({ content: 'x'.repeat(16 * 1024) });
    // The bound, one frame past it, and the close frame: never the ~10 MB delivered.
    const HELD_AT_MOST = BOUND + 20 * 1024;
    const count = 600;
    try {
      for (let i = 0; i < count; i += 30) {
        await Promise.all(
          Array.from({ length: 30 }, () => gw.store.deliver('MESSAGE_CREATE', payload, { sessionIds: [gatewaySessionId] })),
        );
        client.send({ op: 1, d: 1 });
      }
      // Closed, or holding more than the bound allows.
      await expect.poll(async () => (await slowClosures()) > before || most > HELD_AT_MOST, { timeout: 10_000 }).toBe(true);
    } finally {
      clearInterval(sampler);
    }
    expect(most).toBeGreaterThan(0);
    expect(most).toBeLessThanOrEqual(HELD_AT_MOST);
    expect(serverSide.writableLength).toBeLessThanOrEqual(HELD_AT_MOST);
    expect(await slowClosures()).toBe(before + 1);

    (client.ws as unknown as { _socket: Socket })._socket.resume();
    expect(await client.closeCode()).toEqual({ code: 4000, reason: 'Too slow to read' });
    const read = client.dispatches('MESSAGE_CREATE').map((f) => f.s as number);
    expect(read.length).toBeLessThan(count);
    // Nothing is lost: the RESUME from the last frame read replays the rest, in order.
    const resumed = await openSocket(gw.baseUrl);
    resumed.send({ op: 6, d: { token, sessionId: gatewaySessionId, seq: read.at(-1) ?? 1 } });
    await resumed.next((f) => f.t === 'RESUMED', 20_000);
    const replayed = resumed.dispatches('MESSAGE_CREATE').map((f) => f.s as number);
    expect([...read, ...replayed]).toEqual(Array.from({ length: count }, (_, i) => i + 2));
    resumed.ws.close();
  });
});

describe('a revoked session', () => {
  it('has its sockets closed with 4004 even when Redis refuses the revocation, and is refused from memory', async () => {
    const { sessionId, token } = await login();
    const { client } = await identified(token);
    const markKey = `${prefix}r:${sessionId}`;
    const set = gw.redis.set.bind(gw.redis) as (...args: unknown[]) => Promise<unknown>;
    const refused = vi
      .spyOn(gw.redis, 'set')
      .mockImplementation(((...args: unknown[]) =>
        args[0] === markKey ? Promise.reject(new Error('Redis is down')) : set(...args)) as never);
    try {
      const revoking = gw.realtime.sockets.revoke(sessionId);
      expect(await client.closeCode()).toEqual({ code: 4004, reason: 'Session revoked' });
      // Tried a few times, then reported to the caller (which logs it).
      await expect(revoking).rejects.toThrow('Redis is down');
      expect(refused.mock.calls.filter(([key]) => key === markKey)).toHaveLength(3);
    } finally {
      refused.mockRestore();
    }
    expect(await gw.redis.exists(markKey)).toBe(0);
    // This replica still refuses a token of the session that the token verifier does not know revoked.
    const again = await openSocket(gw.baseUrl);
    again.send({ op: 2, d: { token } });
    expect((await again.closeCode()).code).toBe(4004);
  });

  it('has its sockets closed with 4004 when the revocation list delivers it (live or replayed after the bus was away)', async () => {
    const { userId, sessionId, token } = await login();
    const { client, gatewaySessionId } = await identified(token);
    gw.deliverRevocation(sessionId, userId);
    expect(await client.closeCode()).toEqual({ code: 4004, reason: 'Session revoked' });
    await expect.poll(() => gw.redis.exists(`${prefix}r:${sessionId}`)).toBe(1);
    await expect.poll(() => gw.redis.exists(`${prefix}s:${gatewaySessionId}`)).toBe(0);
  });
});

describe('a replica cut off from the bus', () => {
  it('closes with 4004 the sockets of a session revoked while it was away, once it is back (the revocation list replays it)', async () => {
    const nats = new URL(inject('backing').natsUrl);
    const proxy = await startTcpProxy({ host: nats.hostname, port: Number(nats.port) });
    const away = await startSocketGateway({ natsUrl: proxy.url('nats'), revocations: 'watched' });
    try {
      const [userId, sessionId] = [randomUUID(), randomUUID()];
      const client = await openSocket(away.baseUrl);
      await client.identify(await away.issuer.sign(userId, { sessionId }));
      // The list is reading: a revocation of another session reaches it.
      const other = randomUUID();
      await away.publishRevocation(other, userId);
      await expect.poll(() => away.revocations.isRevoked(other), { timeout: 10_000 }).toBe(true);

      const down = new Promise<void>((resolve) => {
        const off = away.gatewayBus.onConnection((up) => {
          if (up) return;
          off();
          resolve();
        });
      });
      proxy.cut();
      await down;
      await away.publishRevocation(sessionId, userId);
      proxy.restore();
      // The client reconnects after its wait, then the ordered consumer notices its gap by missed heartbeats: seconds, more on a busy machine.
      expect(await client.closeCode(50_000)).toEqual({ code: 4004, reason: 'Session revoked' });
    } finally {
      await away.close();
      await proxy.close();
    }
  }, 90_000);
});

describe('a resumed session', () => {
  it('belongs to the login whose token resumed it: revoking that login closes it with 4004', async () => {
    const first = await login();
    const second = await login(first.userId);
    const { client, gatewaySessionId } = await identified(first.token);
    await dropped(client, gatewaySessionId);
    const resumed = await openSocket(gw.baseUrl);
    resumed.send({ op: 6, d: { token: second.token, sessionId: gatewaySessionId, seq: 1 } });
    await resumed.next((f) => f.t === 'RESUMED');
    expect(await gw.redis.hget(`${prefix}s:${gatewaySessionId}`, 'authSid')).toBe(second.sessionId);

    gw.deliverRevocation(second.sessionId, second.userId);
    expect(await resumed.closeCode()).toEqual({ code: 4004, reason: 'Session revoked' });
  });

  it('is refused with INVALID_SESSION when its login was revoked while it was detached, whatever token resumes it', async () => {
    const first = await login();
    const second = await login(first.userId);
    const { client, gatewaySessionId } = await identified(first.token);
    await dropped(client, gatewaySessionId);
    gw.deliverRevocation(first.sessionId, first.userId);
    await expect.poll(() => gw.redis.exists(`${prefix}r:${first.sessionId}`)).toBe(1);

    const resumed = await openSocket(gw.baseUrl);
    resumed.send({ op: 6, d: { token: second.token, sessionId: gatewaySessionId, seq: 1 } });
    expect(await resumed.next((f) => f.op === 9)).toEqual({ op: 9, d: { resumable: false }, s: null, t: null });
    expect(resumed.dispatches()).toEqual([]);
    await expect.poll(() => gw.redis.exists(`${prefix}s:${gatewaySessionId}`)).toBe(0);
    // The second login itself is fine: it identifies afresh.
    resumed.send({ op: 2, d: { token: second.token } });
    await resumed.next((f) => f.t === 'READY');
    resumed.ws.close();
  });

  it('is closed with 4004 when its login is revoked while the RESUME is answered', async () => {
    const first = await login();
    const second = await login(first.userId);
    const { client, gatewaySessionId } = await identified(first.token);
    await dropped(client, gatewaySessionId);
    const hgetall = gw.redis.hgetall.bind(gw.redis) as (...args: unknown[]) => Promise<Record<string, string>>;
    // The revocation lands after the token was checked, while the session is read.
    const reading = vi.spyOn(gw.redis, 'hgetall').mockImplementation((async (...args: unknown[]) => {
      if (args[0] === `${prefix}s:${gatewaySessionId}`) await gw.realtime.sockets.revoke(second.sessionId);
      return hgetall(...args);
    }) as never);
    try {
      const resumed = await openSocket(gw.baseUrl);
      resumed.send({ op: 6, d: { token: second.token, sessionId: gatewaySessionId, seq: 1 } });
      expect(await resumed.closeCode()).toEqual({ code: 4004, reason: 'Session revoked' });
      expect(resumed.dispatches('RESUMED')).toEqual([]);
    } finally {
      reading.mockRestore();
    }
    await expect.poll(() => gw.redis.exists(`${prefix}s:${gatewaySessionId}`)).toBe(0);
  });
});

describe('frames the WebSocket layer refuses', () => {
  it('closes a frame over 16 KiB with 1009 and a text frame of invalid UTF-8 with 1007, as docs/realtime.md lists them', async () => {
    const big = await openSocket(gw.baseUrl);
    big.send({ op: 2, d: { token: 'x'.repeat(20_000) } });
    expect((await big.closeCode()).code).toBe(1009);
    const garbled = await openSocket(gw.baseUrl);
    garbled.ws.send(Buffer.from([0x7b, 0x22, 0x6f, 0x70, 0x22, 0x3a, 0xff, 0xfe, 0x7d]), { binary: false });
    expect((await garbled.closeCode()).code).toBe(1007);
  });
});

describe('a session whose client closes its socket', () => {
  it.each([1000, 1001])(
    "ends with a close %i (Discord's rule): its RESUME gets INVALID_SESSION, and it is gone from Redis",
    async (code) => {
      const { token } = await login();
      const { client, gatewaySessionId } = await identified(token);
      client.close(code);
      await client.closed;
      await expect.poll(() => gw.redis.exists(`${prefix}s:${gatewaySessionId}`)).toBe(0);
      const again = await openSocket(gw.baseUrl);
      again.send({ op: 6, d: { token, sessionId: gatewaySessionId, seq: 1 } });
      expect(await again.next((f) => f.op === 9)).toMatchObject({ op: 9, d: { resumable: false } });
      again.ws.close();
    },
  );

  it('stays resumable after any other close (4000, as a client that means to come back)', async () => {
    const { token } = await login();
    const { client, gatewaySessionId } = await identified(token);
    client.close(4000);
    await client.closed;
    await expect.poll(() => gw.redis.hget(`${prefix}s:${gatewaySessionId}`, 'node')).toBe('');
    const again = await openSocket(gw.baseUrl);
    again.send({ op: 6, d: { token, sessionId: gatewaySessionId, seq: 1 } });
    expect((await again.next((f) => f.t === 'RESUMED')).d).toEqual({ replayed: 0 });
    again.ws.close();
  });
});

describe('presence races', () => {
  it('keeps a choice applied while auth answered the IDENTIFY: the user chose invisible meanwhile, and shows offline', async () => {
    const { userId, token } = await login();
    await gw.reading(STREAMS.auth.name);
    // What was chosen, and what others see (never shown yet reads as offline).
    const choice = async () => {
      const [chosen, seen] = await gw.redis.hmget(`${prefix}ps:${userId}`, 'chosen', 'seen');
      return [chosen, seen ?? 'offline'];
    };
    // Auth answered "online"; the user's switch to invisible is applied before that answer lands.
    gw.audiences.beforeUserGet.set(userId, async () => {
      await gw.publish('auth.presence.updated', { userId, status: 'invisible', customStatus: '' });
      await expect.poll(async () => (await choice())[0]).toBe('invisible');
    });
    const { client } = await identified(token);
    expect(await choice()).toEqual(['invisible', 'offline']);
    client.close();
  });

  it.each([4900, 1000])(
    'keeps a session resumed on another replica, and its user online, when the old socket closes (%i) before the kick arrives',
    async (code) => {
      const { userId, sessionId, token } = await login();
      const { client, gatewaySessionId } = await identified(token);
      // Another replica answered the client's RESUME: it holds the session now. Its kick to this
      // replica is not here yet, so the old socket's close is handled as the client's own.
      await gw.store.attach(gatewaySessionId, 'node-b', sessionId);
      const scripted = gw.redis as unknown as Record<'socketDetach' | 'socketRemove', (...args: unknown[]) => Promise<number>>;
      const closeHandled = vi.spyOn(scripted, code === 1000 ? 'socketRemove' : 'socketDetach');
      client.ws.close(code);
      await client.closed;
      // (Other tests' sockets may still be closing: this session's call is the one that counts.)
      const ofThisSession = () => closeHandled.mock.calls.findIndex((args) => args[1] === gatewaySessionId);
      await vi.waitFor(() => expect(ofThisSession()).toBeGreaterThanOrEqual(0), { timeout: 5_000 });
      expect(await closeHandled.mock.results[ofThisSession()]?.value).toBe(0);
      // What the close does next is sent on the same connection before this read.
      await new Promise((resolve) => setTimeout(resolve, 50));
      closeHandled.mockRestore();
      expect(await gw.redis.hget(`${prefix}s:${gatewaySessionId}`, 'node')).toBe('node-b');
      expect(await gw.redis.sismember(`${prefix}u:${userId}`, gatewaySessionId)).toBe(1);
      expect(await gw.redis.zscore(`${prefix}p:${userId}`, gatewaySessionId)).not.toBeNull();
    },
  );

  it('records no heartbeat of a socket whose session was revoked: the user stays offline', async () => {
    const { userId, sessionId, token } = await login();
    const { client } = await identified(token);
    const sessions = () => gw.redis.zcard(`${prefix}p:${userId}`);
    expect(await sessions()).toBe(1);
    // The client reads nothing more, so it has not answered the close when its heartbeat goes out.
    (client.ws as unknown as { _socket: Socket })._socket.pause();
    await gw.realtime.sockets.revoke(sessionId);
    await expect.poll(sessions).toBe(0);
    client.send({ op: 1, d: null });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await sessions()).toBe(0);
    client.ws.terminate();
  });
});

describe('presence of a socket that closes while its RESUME is answered', () => {
  it('shows the user offline: the close came before the resume marked the session connected, and the mark is undone', async () => {
    const { userId, token } = await login();
    const { client, gatewaySessionId } = await identified(token);
    await dropped(client, gatewaySessionId);
    const presenceKey = `${prefix}p:${userId}`;
    expect(await gw.redis.zcard(presenceKey)).toBe(0);
    const resumed = await openSocket(gw.baseUrl);
    const realMulti = gw.redis.multi.bind(gw.redis) as (...args: unknown[]) => ReturnType<typeof gw.redis.multi>;
    // The resume's presence mark (a MULTI with ZADD of the user's key) waits until the socket has
    // closed and the gateway has recorded the close: the order a flaky network produces.
    const marking = vi.spyOn(gw.redis, 'multi').mockImplementation(((...args: unknown[]) => {
      const pipeline = realMulti(...args);
      let marksUser = false;
      const zadd = pipeline.zadd.bind(pipeline) as (...a: unknown[]) => typeof pipeline;
      pipeline.zadd = ((...a: unknown[]) => {
        marksUser ||= a[0] === presenceKey;
        zadd(...a);
        return pipeline;
      }) as never;
      const exec = pipeline.exec.bind(pipeline);
      pipeline.exec = (() => {
        if (!marksUser) return exec();
        marked = (async () => {
          resumed.ws.terminate();
          await expect.poll(() => gw.redis.hget(`${prefix}s:${gatewaySessionId}`, 'node')).toBe('');
          await new Promise((resolve) => setTimeout(resolve, 100));
          return exec();
        })();
        return marked;
      }) as never;
      return pipeline;
    }) as never);
    let marked: Promise<unknown> | undefined;
    try {
      resumed.send({ op: 6, d: { token, sessionId: gatewaySessionId, seq: 1 } });
      await vi.waitFor(() => expect(marked).toBeDefined(), { timeout: 5_000 });
      await marked;
      await expect.poll(() => gw.redis.zcard(presenceKey), { timeout: 3_000 }).toBe(0);
    } finally {
      marking.mockRestore();
    }
  });
});

describe('a session being identified', () => {
  it('gets, after READY, what was dispatched to its user while READY was being made', async () => {
    const [watcher, joiner, newcomer] = [await login(), await login(), await login()];
    const [serverId, channelId] = [randomUUID(), randomUUID()];
    gw.audiences.viewers.set(channelId, { serverId, userIds: [watcher.userId, newcomer.userId] });
    gw.audiences.members.set(serverId, [watcher.userId, joiner.userId, newcomer.userId]);
    await gw.reading(STREAMS.guilds.name);
    const { client: watching } = await identified(watcher.token);
    const joined = liveVoiceState(joiner.userId, serverId, channelId);
    // While auth answers the newcomer's IDENTIFY, someone joins voice where the newcomer sees it:
    // the watcher, connected already, has the dispatch before auth's answer is given.
    gw.audiences.beforeUserGet.set(newcomer.userId, async () => {
      await gw.publish(VOICE_SUBJECTS.joined, joined);
      await watching.next((f) => f.t === 'VOICE_STATE_UPDATE' && f.d.userId === joiner.userId);
    });
    const { client } = await identified(newcomer.token);
    const update = await client.next((f) => f.t === 'VOICE_STATE_UPDATE' && f.d.userId === joiner.userId, 3_000);
    expect(update).toMatchObject({ s: 2, d: { channelId } });
    expect(client.dispatches().map((f) => f.t)).toEqual(['READY', 'VOICE_STATE_UPDATE']);
    for (const c of [client, watching]) c.close();
  });
});

describe('voice states', () => {
  const serverId = randomUUID();
  const [lobby, backRoom] = [randomUUID(), randomUUID()];
  const state = (userId: string, channelId: string) => liveVoiceState(userId, serverId, channelId);
  const voiceOf = (c: GatewayClient) => c.dispatches().filter((f) => f.t?.startsWith('VOICE_STATE_'));
  const seen = (c: GatewayClient) => voiceOf(c).map((f) => `${f.t} ${f.d.userId} ${f.d.channelId}${f.d.reason ? ` ${f.d.reason}` : ''}`);

  it('go to who sees the channel and to the user; a move into a hidden channel shows who cannot see it a leave', async () => {
    const [viewer, plain, mover, marker] = [await login(), await login(), await login(), await login()];
    // A member connected to the hidden channel sees it (guilds' viewers say so); the plain member never does.
    gw.audiences.viewers.set(lobby, { serverId, userIds: [viewer.userId, plain.userId, mover.userId] });
    gw.audiences.viewers.set(backRoom, { serverId, userIds: [viewer.userId, mover.userId] });
    gw.audiences.members.set(serverId, [viewer.userId, plain.userId, mover.userId]);
    await gw.reading(STREAMS.guilds.name);
    const [v, p, m] = [
      (await identified(viewer.token)).client,
      (await identified(plain.token)).client,
      (await identified(mover.token)).client,
    ];

    await gw.publish(VOICE_SUBJECTS.joined, state(mover.userId, backRoom));
    await gw.publish(VOICE_SUBJECTS.moved, { ...state(mover.userId, lobby), fromChannelId: backRoom, movedBy: viewer.userId });
    await gw.publish(VOICE_SUBJECTS.moved, { ...state(mover.userId, backRoom), fromChannelId: lobby, movedBy: viewer.userId });
    await gw.publish(VOICE_SUBJECTS.updated, { ...state(mover.userId, backRoom), selfMute: true });
    await gw.publish(VOICE_SUBJECTS.left, { userId: mover.userId, serverId, channelId: backRoom, reason: 'left' });
    // The stream keeps its order: once the marker is there, every event before it had its chance.
    await gw.publish(VOICE_SUBJECTS.joined, state(marker.userId, lobby));
    for (const c of [v, p, m]) await c.next((f) => f.t === 'VOICE_STATE_UPDATE' && f.d.userId === marker.userId);

    const everything = [
      `VOICE_STATE_UPDATE ${mover.userId} ${backRoom}`,
      `VOICE_STATE_UPDATE ${mover.userId} ${lobby}`,
      `VOICE_STATE_UPDATE ${mover.userId} ${backRoom}`,
      `VOICE_STATE_UPDATE ${mover.userId} ${backRoom}`,
      `VOICE_STATE_DELETE ${mover.userId} ${backRoom} left`,
    ];
    // The plain member sees the mover only in the lobby, and leaving it: never the back room.
    expect(seen(p)).toEqual([
      `VOICE_STATE_UPDATE ${mover.userId} ${lobby}`,
      `VOICE_STATE_DELETE ${mover.userId} ${lobby} switched`,
      `VOICE_STATE_UPDATE ${marker.userId} ${lobby}`,
    ]);
    expect(JSON.stringify(voiceOf(p))).not.toContain(backRoom);
    for (const c of [v, m]) expect(seen(c)).toEqual([...everything, `VOICE_STATE_UPDATE ${marker.userId} ${lobby}`]);
    for (const c of [v, p, m]) c.ws.close();
  });

  it('that ended with their channel go to who viewed it (viewerIds, fromViewerIds), which no dispatch shows', async () => {
    const [viewer, plain, mover, marker] = [await login(), await login(), await login(), await login()];
    // Both channels went with the event: guilds knows no viewers of them any more.
    const [gone, goneToo, room] = [randomUUID(), randomUUID(), randomUUID()];
    gw.audiences.viewers.set(room, { serverId, userIds: [viewer.userId, mover.userId] });
    await gw.reading(STREAMS.guilds.name);
    const [v, p, m] = [
      (await identified(viewer.token)).client,
      (await identified(plain.token)).client,
      (await identified(mover.token)).client,
    ];

    await gw.publish(VOICE_SUBJECTS.left, { userId: mover.userId, serverId, channelId: gone, reason: 'left', viewerIds: [viewer.userId] });
    await gw.publish(VOICE_SUBJECTS.moved, {
      ...state(mover.userId, room),
      fromChannelId: goneToo,
      movedBy: null,
      fromViewerIds: [viewer.userId, plain.userId, mover.userId],
    });
    await gw.publish(VOICE_SUBJECTS.joined, state(marker.userId, room));
    await gw.publish(VOICE_SUBJECTS.left, {
      userId: marker.userId,
      serverId,
      channelId: goneToo,
      reason: 'left',
      viewerIds: [plain.userId],
    });
    for (const c of [v, m]) await c.next((f) => f.t === 'VOICE_STATE_UPDATE' && f.d.userId === marker.userId);
    await p.next((f) => f.t === 'VOICE_STATE_DELETE' && f.d.userId === marker.userId);

    expect(seen(v)).toEqual([
      `VOICE_STATE_DELETE ${mover.userId} ${gone} left`,
      `VOICE_STATE_UPDATE ${mover.userId} ${room}`,
      `VOICE_STATE_UPDATE ${marker.userId} ${room}`,
    ]);
    expect(seen(m)).toEqual(seen(v));
    // The plain member saw the mover only in the channel that went, and cannot see where they went.
    expect(seen(p)).toEqual([
      `VOICE_STATE_DELETE ${mover.userId} ${goneToo} switched`,
      `VOICE_STATE_DELETE ${marker.userId} ${goneToo} left`,
    ]);
    for (const c of [v, p, m]) {
      expect(JSON.stringify(voiceOf(c))).not.toContain('viewerIds');
      expect(JSON.stringify(voiceOf(c))).not.toContain('ViewerIds');
    }
    for (const c of [v, p, m]) c.ws.close();
  });
});

/** The answer to an upgrade the gateway refuses, with its body. */
function refusedUpgrade(ip: string): Promise<{ res: IncomingMessage; body: unknown }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(gw.url, { headers: { 'x-forwarded-for': ip } });
    ws.on('error', () => {});
    ws.on('open', () => reject(new Error('the upgrade was accepted')));
    ws.on('unexpected-response', (_req, res) => {
      let text = '';
      res.on('data', (chunk) => {
        text += chunk;
      });
      res.on('end', () => resolve({ res, body: JSON.parse(text) }));
    });
  });
}

describe('the upgrade', () => {
  it('carries X-RateLimit-* on the 101, and on the 429 with Retry-After and {"error"} once the General tier is spent', async () => {
    const ip = `10.77.${Math.floor(Math.random() * 256)}.1`;
    const socket = await openSocket(gw.baseUrl, ip);
    expect(socket.headers).toMatchObject({
      'x-ratelimit-limit': '300',
      'x-ratelimit-remaining': '299',
      'x-ratelimit-reset': expect.stringMatching(/^\d+$/),
    });
    socket.ws.close();
    for (let i = 0; i < 299; i++) await gw.limiter.hit({ tier: 'general', subject: rateSubject(ip) });

    const { res, body } = await refusedUpgrade(ip);
    expect(res.statusCode).toBe(429);
    expect(body).toEqual({ error: 'Too many requests, slow down and retry later' });
    expect(res.headers).toMatchObject({
      'retry-after': expect.stringMatching(/^\d+$/),
      'x-ratelimit-limit': '300',
      'x-ratelimit-remaining': '0',
      'x-ratelimit-reset': expect.stringMatching(/^\d+$/),
    });
    expect(Number(res.headers['x-ratelimit-reset'])).toBeGreaterThanOrEqual(Math.floor(Date.now() / 1000));
  });

  it('is taken at the socket path only: any other request offering one (curl --http2) is served as a plain request', async () => {
    const headers = { connection: 'Upgrade, HTTP2-Settings', upgrade: 'h2c', 'http2-settings': 'AAMAAABkAARAAAAAAAIAAAAA' };
    const { res, body } = await new Promise<{ res: IncomingMessage; body: string }>((resolve, reject) => {
      get(`${gw.baseUrl}/v1/gateway`, { headers }, (answer) => {
        let text = '';
        answer.on('data', (chunk) => {
          text += chunk;
        });
        answer.on('end', () => resolve({ res: answer, body: text }));
      }).on('error', reject);
    });
    expect(res.statusCode).toBe(200);
    expect(JSON.parse(body)).toEqual({ url: expect.stringMatching(/\/v1\/gateway\/ws$/) });
    expect(res.headers['x-ratelimit-limit']).toBe('300');
  });
});
