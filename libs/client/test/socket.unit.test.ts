import { CLOSE_CODES, OP } from '@chat/contracts';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ChatSocket, type SocketOptions, type WebSocketLike } from '../src/index.ts';

// The socket's own rules (heartbeat timing, a dead link, RECONNECT, INVALID_SESSION, a refused
// token) against scripted sockets and fake timers: the real gateway cannot be made to stop
// acknowledging heartbeats on demand, and its interval is 41 s. test/e2e/client-socket.test.ts
// runs the socket against the real gateway.

const SESSION = '0190f3c1-7a6e-7c1e-9a8b-1234567890ab';
const INTERVAL = 1_000;

/** A socket whose frames the test sends and whose sent frames it reads. */
class ScriptedSocket implements WebSocketLike {
  readyState = 1;
  readonly sent: { op: number; d: unknown }[] = [];
  closedWith: number | undefined;
  onmessage: WebSocketLike['onmessage'] = null;
  onclose: WebSocketLike['onclose'] = null;
  onerror: WebSocketLike['onerror'] = null;

  send(data: string): void {
    this.sent.push(JSON.parse(data));
  }

  close(code = 1000): void {
    this.closedWith = code;
    this.readyState = 3;
  }

  /** A frame from the gateway. */
  receive(op: number, d: unknown, s: number | null = null, t: string | null = null): void {
    this.onmessage?.({ data: JSON.stringify({ op, d, s, t }) });
  }

  /** The gateway closes the socket. */
  drop(code: number, reason = ''): void {
    this.readyState = 3;
    this.onclose?.({ code, reason });
  }

  ops(): number[] {
    return this.sent.map((f) => f.op);
  }
}

let sockets: ScriptedSocket[];
let token: string;

beforeEach(() => {
  vi.useFakeTimers();
  sockets = [];
  token = 'token-1';
});
afterEach(() => {
  vi.useRealTimers();
});

function chatSocket(options: Partial<SocketOptions> = {}): ChatSocket {
  return new ChatSocket({
    url: async () => 'ws://gateway.test/v1/gateway/ws',
    token: () => token,
    createWebSocket: () => {
      const socket = new ScriptedSocket();
      sockets.push(socket);
      return socket;
    },
    reconnectDelayMs: 100,
    // The first beat half-way through the interval; reconnect waits at 3/4 of their step.
    random: () => 0.5,
    ...options,
  });
}

const latest = () => sockets[sockets.length - 1] as ScriptedSocket;
const settle = () => vi.advanceTimersByTimeAsync(0);

/** Opens the socket and answers HELLO and READY; the session has seq 1. */
async function ready(socket: ChatSocket) {
  const connected = socket.connect();
  await settle();
  latest().receive(OP.HELLO, { heartbeatInterval: INTERVAL });
  latest().receive(OP.DISPATCH, { sessionId: SESSION, user: {}, serverIds: [], conversationIds: [] }, 1, 'READY');
  return connected;
}

describe('the socket client', () => {
  it('identifies after HELLO, then heartbeats once per interval with the last seq', async () => {
    const socket = chatSocket();
    const connected = await ready(socket);
    expect(connected.sessionId).toBe(SESSION);
    expect(latest().sent[0]).toEqual({ op: OP.IDENTIFY, d: { token: 'token-1' } });
    expect(socket.status).toBe('ready');

    await vi.advanceTimersByTimeAsync(INTERVAL / 2 - 1);
    expect(latest().ops()).toEqual([OP.IDENTIFY]);
    await vi.advanceTimersByTimeAsync(1);
    expect(latest().sent[1]).toEqual({ op: OP.HEARTBEAT, d: 1 });
    latest().receive(OP.HEARTBEAT_ACK, null);
    latest().receive(OP.DISPATCH, { id: 'm' }, 2, 'MESSAGE_CREATE');
    await vi.advanceTimersByTimeAsync(INTERVAL);
    expect(latest().sent[2]).toEqual({ op: OP.HEARTBEAT, d: 2 });
  });

  it('takes a beat without an ACK for a dead link: drops it and resumes on a new socket', async () => {
    const socket = chatSocket();
    await ready(socket);
    await vi.advanceTimersByTimeAsync(INTERVAL / 2);
    // No ACK for that beat: at the next one the link counts as dead.
    await vi.advanceTimersByTimeAsync(INTERVAL);
    expect(sockets[0]?.closedWith).toBe(4900);
    expect(socket.status).toBe('reconnecting');
    await vi.advanceTimersByTimeAsync(1);
    expect(sockets).toHaveLength(2);
    latest().receive(OP.HELLO, { heartbeatInterval: INTERVAL });
    expect(latest().sent).toEqual([{ op: OP.RESUME, d: { token: 'token-1', sessionId: SESSION, seq: 1 } }]);
    expect(socket.status).toBe('resuming');
  });

  it('resumes after RECONNECT and hands over each replayed dispatch once', async () => {
    const socket = chatSocket();
    const seen: number[] = [];
    socket.on('MESSAGE_CREATE', (_d, dispatch) => seen.push(dispatch.s));
    await ready(socket);
    latest().receive(OP.DISPATCH, { id: 'a' }, 2, 'MESSAGE_CREATE');
    latest().receive(OP.RECONNECT, null);
    await settle();
    expect(sockets).toHaveLength(2);
    latest().receive(OP.HELLO, { heartbeatInterval: INTERVAL });
    expect(latest().sent).toEqual([{ op: OP.RESUME, d: { token: 'token-1', sessionId: SESSION, seq: 2 } }]);
    // The gateway replays after seq 2; a frame it sends twice is handed over once.
    latest().receive(OP.DISPATCH, { id: 'b' }, 3, 'MESSAGE_CREATE');
    latest().receive(OP.DISPATCH, { id: 'b' }, 3, 'MESSAGE_CREATE');
    latest().receive(OP.DISPATCH, { replayed: 1 }, 4, 'RESUMED');
    expect(seen).toEqual([2, 3]);
    expect(socket.status).toBe('ready');
    expect(socket.seq).toBe(4);
  });

  it('identifies afresh on the same socket after INVALID_SESSION that is not resumable', async () => {
    const socket = chatSocket();
    await ready(socket);
    latest().drop(1006);
    await vi.advanceTimersByTimeAsync(100);
    latest().receive(OP.HELLO, { heartbeatInterval: INTERVAL });
    expect(latest().ops()).toEqual([OP.RESUME]);
    latest().receive(OP.INVALID_SESSION, { resumable: false });
    expect(latest().sent[1]).toEqual({ op: OP.IDENTIFY, d: { token: 'token-1' } });
    expect(socket.sessionId).toBeUndefined();
    expect(socket.seq).toBeNull();
  });

  it('waits longer after each failed attempt, and starts again at the first wait once connected', async () => {
    const socket = chatSocket();
    await ready(socket);
    latest().drop(1006);
    await vi.advanceTimersByTimeAsync(74);
    expect(sockets).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(sockets).toHaveLength(2);
    latest().drop(1006);
    await vi.advanceTimersByTimeAsync(149);
    expect(sockets).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(1);
    expect(sockets).toHaveLength(3);
    latest().receive(OP.HELLO, { heartbeatInterval: INTERVAL });
    latest().receive(OP.DISPATCH, { replayed: 0 }, 2, 'RESUMED');
    latest().drop(1006);
    await vi.advanceTimersByTimeAsync(75);
    expect(sockets).toHaveLength(4);
  });

  it('refreshes a refused token once, and gives up when the new one is refused too', async () => {
    const refresh = vi.fn(async (stale: string) => {
      expect(stale).toBe('token-1');
      token = 'token-2';
      return true;
    });
    const socket = chatSocket({ refresh });
    const statuses: string[] = [];
    socket.onStatus((status) => statuses.push(status));
    const connected = socket.connect();
    await settle();
    latest().receive(OP.HELLO, { heartbeatInterval: INTERVAL });
    latest().drop(CLOSE_CODES.AUTHENTICATION_FAILED, 'Authentication failed');
    await settle();
    expect(refresh).toHaveBeenCalledTimes(1);
    expect(sockets).toHaveLength(2);
    latest().receive(OP.HELLO, { heartbeatInterval: INTERVAL });
    expect(latest().sent).toEqual([{ op: OP.IDENTIFY, d: { token: 'token-2' } }]);
    latest().drop(CLOSE_CODES.AUTHENTICATION_FAILED, 'Session revoked');
    await settle();
    await expect(connected).rejects.toThrow(/refused the session: 4004 Session revoked/);
    expect(refresh).toHaveBeenCalledTimes(1);
    expect(socket.status).toBe('closed');
    expect(statuses.at(-1)).toBe('closed');
    await vi.advanceTimersByTimeAsync(60_000);
    expect(sockets).toHaveLength(2);
  });
  it('ends the session on close(): a later connect() identifies afresh and resolves with the new READY', async () => {
    const socket = chatSocket();
    await ready(socket);
    socket.close();
    expect(sockets[0]?.closedWith).toBe(1000);
    expect(socket.sessionId).toBeUndefined();
    expect(socket.seq).toBeNull();

    const again = socket.connect();
    await settle();
    expect(sockets).toHaveLength(2);
    latest().receive(OP.HELLO, { heartbeatInterval: INTERVAL });
    expect(latest().sent).toEqual([{ op: OP.IDENTIFY, d: { token: 'token-1' } }]);
    const second = '0190f3c1-7a6e-7c1e-9a8b-1234567890ac';
    latest().receive(OP.DISPATCH, { sessionId: second, user: {}, serverIds: [], conversationIds: [] }, 1, 'READY');
    await expect(again).resolves.toMatchObject({ sessionId: second });
    expect(socket.status).toBe('ready');
  });

  it('leaves unused a socket that an opening begun before close() gets after it', async () => {
    const socket = chatSocket();
    socket.connect();
    socket.close();
    socket.connect();
    await settle();
    expect(sockets).toHaveLength(2);
    expect(sockets[0]?.closedWith).toBe(1000);
    expect(sockets[0]?.onmessage).toBeNull();
    latest().receive(OP.HELLO, { heartbeatInterval: INTERVAL });
    expect(latest().sent).toEqual([{ op: OP.IDENTIFY, d: { token: 'token-1' } }]);
  });

  it('refreshes the token it sent when refused, not the one the client holds by then', async () => {
    // HTTP calls refreshed the pair while the IDENTIFY was on its way: the client reuses that refresh for 'token-1'.
    const refresh = vi.fn(async () => true);
    const socket = chatSocket({ refresh });
    socket.connect();
    await settle();
    latest().receive(OP.HELLO, { heartbeatInterval: INTERVAL });
    token = 'token-2';
    latest().drop(CLOSE_CODES.AUTHENTICATION_FAILED, 'Authentication failed');
    await settle();
    expect(refresh).toHaveBeenCalledWith('token-1');
    expect(refresh).toHaveBeenCalledTimes(1);
    latest().receive(OP.HELLO, { heartbeatInterval: INTERVAL });
    expect(latest().sent).toEqual([{ op: OP.IDENTIFY, d: { token: 'token-2' } }]);
  });

  it('tries again later when the refresh failed for a passing reason, instead of giving up', async () => {
    const refresh = vi
      .fn<(stale: string) => Promise<boolean>>()
      .mockRejectedValueOnce(new Error('Service unavailable'))
      .mockImplementation(async () => {
        token = 'token-2';
        return true;
      });
    const socket = chatSocket({ refresh });
    const connected = socket.connect();
    await settle();
    latest().receive(OP.HELLO, { heartbeatInterval: INTERVAL });
    latest().drop(CLOSE_CODES.AUTHENTICATION_FAILED, 'Authentication failed');
    await settle();
    expect(socket.status).toBe('reconnecting');
    await vi.advanceTimersByTimeAsync(75);
    latest().receive(OP.HELLO, { heartbeatInterval: INTERVAL });
    latest().drop(CLOSE_CODES.AUTHENTICATION_FAILED, 'Authentication failed');
    await settle();
    expect(refresh).toHaveBeenCalledTimes(2);
    latest().receive(OP.HELLO, { heartbeatInterval: INTERVAL });
    expect(latest().sent).toEqual([{ op: OP.IDENTIFY, d: { token: 'token-2' } }]);
    latest().receive(OP.DISPATCH, { sessionId: SESSION, user: {}, serverIds: [], conversationIds: [] }, 1, 'READY');
    await expect(connected).resolves.toMatchObject({ sessionId: SESSION });
  });
});
