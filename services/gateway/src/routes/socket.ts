import { type IncomingMessage, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { setTimeout as wait } from 'node:timers/promises';
import {
  type ChosenStatus,
  CLOSE_CODES,
  type CloseCode,
  OP,
  ReadyData,
  UserConversationsRpc,
  UserGetRpc,
  UserServersRpc,
} from '@chat/contracts';
import { setBounded, type TokenVerifier } from '@chat/kit';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { v7 as uuidv7 } from 'uuid';
import { type WebSocket, WebSocketServer } from 'ws';
import type { GatewayConfig } from '../config.ts';
import type { Ask } from '../domain/audience.ts';
import { rateSubject } from '../domain/client-ip.ts';
import { decodeFrame, HEARTBEAT_ACK, hello, INVALID_SESSION, RECONNECT } from '../domain/frames.ts';
import type { Presence } from '../domain/presence.ts';
import { type RateLimiter, rateLimitHeaders } from '../domain/rate-limit.ts';
import { dispatchFrames, kickMessage, parsePublished, type SessionStore, type StoredSession } from '../domain/session-store.ts';
import * as socketMetrics from '../domain/socket-metrics.ts';

export const SOCKET_PATH = '/v1/gateway/ws';
/** A revoked token session is remembered this long (longer than any access token lives). */
const REVOKED_MEMORY_MS = 60 * 60_000;
/** Revocations this replica applied, also kept in its memory: they hold while Redis is down or slow. */
const MAX_REVOKED_IN_MEMORY = 50_000;
/** Attempts at writing a revocation to Redis, the wait between them doubling from the first. */
const MARK_ATTEMPTS = 3;
const MARK_RETRY_MS = 250;
const MAX_FRAME_BYTES = 16 * 1024;
/** Every frame the gateway sends is a text frame, bytes included. */
const TEXT = { binary: false } as const;

/** A frame as text, or as the UTF-8 bytes of text (fan-out frames share their encoded payload). */
type Frame = string | Buffer;

/** One client socket. Kept small: ten thousand of them live in one process. */
interface Conn {
  ws: WebSocket;
  openedAt: number;
  lastBeat: number;
  windowStart: number;
  frames: number;
  /** An IDENTIFY or RESUME is being answered. */
  busy: boolean;
  sessionId?: string;
  userId?: string;
  authSid?: string;
  /** The last dispatch sequence sent on this socket. */
  lastSent: number;
  /** Dispatches that arrived while the buffer is being replayed, sent after it. */
  pending?: { seq: number; frame: Frame }[];
  /** Closed by the gateway for a reason that ends the session (revocation) or hands it over (resume elsewhere). */
  ended?: 'revoked' | 'taken-over';
  /** The close was handled (a shutdown handles it before the socket's own close event). */
  closed?: boolean;
}

export interface SocketDeps {
  config: GatewayConfig;
  log: Logger;
  tokens: TokenVerifier;
  limiter: RateLimiter;
  clientIp: (peer: string | undefined, headers: IncomingMessage['headers']) => string;
  store: SessionStore;
  presence: Presence;
  ask: Ask;
  /** Receives the frames published for this replica's sessions. */
  subscriber: Redis;
  /** Publishes to other replicas (a resume taking a session over). */
  publisher: Redis;
  now?: () => number;
}

/**
 * The real-time socket of one gateway replica: the opcodes of DESIGN.md, sessions in Redis (so any
 * replica can resume them), dispatches from the session store's stream for this replica.
 */
export function createSocketServer(deps: SocketDeps) {
  const { config, log, store, presence } = deps;
  const now = deps.now ?? Date.now;
  const node = uuidv7();
  const interval = config.GATEWAY_HEARTBEAT_INTERVAL_MS;
  const helloFrame = hello(interval);
  const wss = new WebSocketServer({ noServer: true, maxPayload: MAX_FRAME_BYTES, perMessageDeflate: false, clientTracking: false });
  const live = new Set<Conn>();
  const bySession = new Map<string, Conn>();
  const byAuthSession = new Map<string, Set<Conn>>();
  const revokedHere = new Map<string, number>();
  const rateHeadersOf = new WeakMap<IncomingMessage, Record<string, string>>();
  // The upgrade's 101 carries the rate headers every other answer has.
  wss.on('headers', (headers, req) => {
    for (const [name, value] of Object.entries(rateHeadersOf.get(req) ?? {})) headers.push(`${name}: ${value}`);
  });

  // Until then no socket is accepted: its frames would have nowhere to arrive.
  let listening = false;
  const ready = subscribeWhenUp(deps.subscriber, store.channelOf(node), log).then(() => {
    listening = true;
  });
  deps.subscriber.on('message', (_channel: string, message: string) => onPublished(message));
  // What was published to this replica while its subscriber was away is lost to the subscription,
  // not to the buffer: once subscribed again, every session here reads what it missed. Subscribed
  // here (again) because ioredis' own resubscription cannot be awaited: a buffer read before it took
  // effect could miss a frame published in between.
  deps.subscriber.on('ready', () => {
    if (!listening) return;
    deps.subscriber
      .subscribe(store.channelOf(node))
      .then(() => {
        for (const conn of bySession.values()) catchUpFromBuffer(conn);
      })
      .catch((err) => log.warn({ err }, 'could not subscribe again after Redis came back'));
  });

  /**
   * Writes a frame. What a client does not read stays in this process's memory: past the bound the
   * socket is closed, and what it missed waits in the replay buffer for its RESUME. The replay of a
   * RESUME is not `bounded`: the buffer's size bounds it, and it is written whole.
   */
  function send(conn: Conn, frame: Frame, bounded = true) {
    if (conn.ws.readyState !== conn.ws.OPEN) return;
    if (bounded && conn.ws.bufferedAmount > config.GATEWAY_MAX_BUFFERED_BYTES) {
      socketMetrics.slowClients.inc();
      return close(conn, CLOSE_CODES.UNKNOWN_ERROR, 'Too slow to read');
    }
    conn.ws.send(frame, TEXT);
  }

  function close(conn: Conn, code: CloseCode | 1000 | 1012, reason: string) {
    if (conn.ws.readyState === conn.ws.OPEN || conn.ws.readyState === conn.ws.CONNECTING) conn.ws.close(code, reason);
  }

  /** A dispatch for sessions this replica holds (one message for all of them), or a takeover. */
  function onPublished(message: string) {
    const published = parsePublished(message);
    if (published?.kind === 'kick') {
      const conn = bySession.get(published.sessionId);
      if (!conn) return;
      conn.ended = 'taken-over';
      return close(conn, 1000, 'Session resumed elsewhere');
    }
    if (!published) return;
    const frameOf = dispatchFrames(published.t, published.d);
    for (const { sessionId, seq } of published.targets) {
      const conn = bySession.get(sessionId);
      if (!conn) continue;
      push(conn, seq, frameOf(seq));
      socketMetrics.countDispatchWritten(published.t, published.publishedAtMs);
    }
  }

  function push(conn: Conn, seq: number, frame: Frame) {
    if (conn.pending) return void conn.pending.push({ seq, frame });
    if (seq <= conn.lastSent) return;
    if (seq === conn.lastSent + 1) {
      conn.lastSent = seq;
      return send(conn, frame);
    }
    // A gap (the subscription reconnected and missed frames): read them from the buffer, then go on.
    conn.pending = [{ seq, frame }];
    void catchUp(conn);
  }

  /** Sends what the buffer holds after the last frame sent, unless the connection is catching up or waiting for READY already. */
  function catchUpFromBuffer(conn: Conn) {
    if (conn.pending || conn.closed) return;
    conn.pending = [];
    void catchUp(conn);
  }

  async function catchUp(conn: Conn) {
    try {
      if (conn.sessionId) for (const f of await store.framesAfter(conn.sessionId, conn.lastSent)) sendInOrder(conn, f);
    } catch (err) {
      log.warn({ err }, 'could not read the replay buffer');
    }
    flushPending(conn);
  }

  function sendInOrder(conn: Conn, f: { seq: number; frame: Frame }, bounded = true) {
    if (f.seq <= conn.lastSent) return;
    conn.lastSent = f.seq;
    send(conn, f.frame, bounded);
  }

  function flushPending(conn: Conn) {
    const pending = (conn.pending ?? []).sort((a, b) => a.seq - b.seq);
    conn.pending = undefined;
    for (const f of pending) sendInOrder(conn, f);
  }

  function register(conn: Conn) {
    const sessionId = conn.sessionId as string;
    const previous = bySession.get(sessionId);
    if (previous && previous !== conn) {
      previous.ended = 'taken-over';
      close(previous, 1000, 'Session resumed elsewhere');
    }
    bySession.set(sessionId, conn);
    const group = byAuthSession.get(conn.authSid as string) ?? new Set<Conn>();
    group.add(conn);
    byAuthSession.set(conn.authSid as string, group);
  }

  function unregister(conn: Conn) {
    if (!conn.sessionId) return;
    if (bySession.get(conn.sessionId) === conn) bySession.delete(conn.sessionId);
    const group = byAuthSession.get(conn.authSid as string);
    group?.delete(conn);
    if (group?.size === 0) byAuthSession.delete(conn.authSid as string);
  }

  /** Whether any of these token sessions was revoked on this replica (memory, which holds while Redis is down) or on any (Redis). */
  async function isRevoked(...authSids: string[]): Promise<boolean> {
    const at = now();
    if (authSids.some((sid) => (revokedHere.get(sid) ?? 0) > at)) return true;
    return store.isRevoked(...authSids);
  }

  /** Written to Redis, where every replica refuses a RESUME or IDENTIFY with a still-valid token of the session. */
  async function rememberRevoked(authSid: string): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await store.markRevoked(authSid, REVOKED_MEMORY_MS);
      } catch (err) {
        if (attempt === MARK_ATTEMPTS) throw err;
        await wait(MARK_RETRY_MS * 2 ** (attempt - 1));
      }
    }
  }

  /** The token's identity, or the close code that ends the attempt. */
  async function authenticate(token: string): Promise<{ id: string; sessionId: string } | CloseCode> {
    try {
      const identity = await deps.tokens.verify(token);
      if (await isRevoked(identity.sessionId)) return CLOSE_CODES.AUTHENTICATION_FAILED;
      return identity;
    } catch (err) {
      return (err as { status?: number }).status === 401 ? CLOSE_CODES.AUTHENTICATION_FAILED : CLOSE_CODES.UNKNOWN_ERROR;
    }
  }

  async function identify(conn: Conn, token: string) {
    const identity = await authenticate(token);
    if (typeof identity === 'number')
      return close(conn, identity, identity === CLOSE_CODES.UNKNOWN_ERROR ? 'Try again' : 'Authentication failed');
    if (!(await store.countIdentify(identity.id, config.GATEWAY_IDENTIFY_PER_DAY))) {
      return close(conn, CLOSE_CODES.RATE_LIMITED, 'Too many identifies today');
    }
    const sessionId = uuidv7();
    // Dispatches that arrive before READY is sent wait behind it.
    Object.assign(conn, { sessionId, userId: identity.id, authSid: identity.sessionId, lastSent: 1, pending: [] });
    register(conn);
    // Reachable before the snapshot is read: what happens meanwhile is dispatched after READY
    // (and may repeat what READY shows) rather than lost.
    await store.open({ sessionId, userId: identity.id, authSid: identity.sessionId, node });
    // Read before auth is asked: a presence change applied while it answers is newer than its answer.
    const choiceBefore = await presence.choiceNow(identity.id);
    const [user, servers, conversations] = await Promise.all([
      deps.ask(UserGetRpc, { userId: identity.id }),
      deps.ask(UserServersRpc, { userId: identity.id }),
      deps.ask(UserConversationsRpc, { userId: identity.id }),
    ]);
    if (conn.ws.readyState !== conn.ws.OPEN) return;
    // Connected before READY: a client that has READY counts as online on every replica.
    const chosen: ChosenStatus = user.status === 'offline' ? 'invisible' : user.status;
    await showConnected(conn, identity.id, sessionId, () => presence.seedChoice(identity.id, choiceBefore, chosen, user.customStatus));
    const readyData = ReadyData.parse({ sessionId, user, serverIds: servers.serverIds, conversationIds: conversations.conversationIds });
    const readyFrame = await store.ready(sessionId, JSON.stringify(readyData));
    send(conn, readyFrame);
    socketMetrics.identifies.inc();
    flushPending(conn);
    // A revocation that landed while this identify was answered.
    if (await isRevoked(identity.sessionId)) return revokeConn(conn);
  }

  async function resume(conn: Conn, d: { token: string; sessionId: string; seq: number }) {
    const identity = await authenticate(d.token);
    if (typeof identity === 'number')
      return close(conn, identity, identity === CLOSE_CODES.UNKNOWN_ERROR ? 'Try again' : 'Authentication failed');
    const verdict = await store.checkResume(d.sessionId, identity.id, d.seq);
    if (!verdict.ok) {
      if (verdict.reason === 'future-seq') return close(conn, CLOSE_CODES.INVALID_SEQ, 'Invalid seq');
      socketMetrics.invalidSessions.inc({ reason: verdict.reason });
      return send(conn, INVALID_SESSION);
    }
    // Revoking a token session ends its gateway sessions, detached ones too: no other token resumes them.
    if (await isRevoked(verdict.session.authSid)) return refuseRevoked(conn, verdict.session);
    if (conn.ws.readyState !== conn.ws.OPEN) return;
    // The session is the resuming token's from now on: revoking that token's session closes it.
    Object.assign(conn, { sessionId: d.sessionId, userId: identity.id, authSid: identity.sessionId, lastSent: d.seq, pending: [] });
    register(conn);
    const previousNode = await store.attach(d.sessionId, node, identity.sessionId);
    if (previousNode && previousNode !== node) await deps.publisher.publish(store.channelOf(previousNode), kickMessage(d.sessionId));
    // A revocation that landed while this resume was answered, before the socket was registered.
    if (await isRevoked(identity.sessionId, verdict.session.authSid)) return revokeConn(conn);
    // Read after attaching: what was delivered meanwhile went to the old replica, and is in the buffer.
    // The replayed frames end with RESUMED, numbered with them; later dispatches wait in pending.
    const frames = await store.replay(d.sessionId, d.seq);
    if (!frames) return send(conn, INVALID_SESSION);
    for (const f of frames) sendInOrder(conn, f, false);
    flushPending(conn);
    socketMetrics.resumes.inc();
    socketMetrics.dispatchesReplayed.inc(frames.length - 1);
    // Written here rather than through the node's stream: counted as every dispatch is.
    socketMetrics.countDispatchWritten('RESUMED', undefined);
    await showConnected(conn, identity.id, d.sessionId);
  }

  /** A RESUME of a session whose token session was revoked while it was detached: it ends. */
  function refuseRevoked(conn: Conn, session: StoredSession) {
    socketMetrics.invalidSessions.inc({ reason: 'revoked' });
    send(conn, INVALID_SESSION);
    store.remove(session.sessionId, session.userId).catch((err) => log.warn({ err }, 'could not end a revoked session'));
  }

  /**
   * Presence of a session that identified or resumed. Its failure (a service that does not answer
   * who the user's friends are) does not fail the session: the next change shows the right status.
   */
  async function showConnected(conn: Conn, userId: string, sessionId: string, before?: () => Promise<void>) {
    try {
      await before?.();
      await presence.connected(userId, sessionId);
      // A socket that closed meanwhile ran onClose's disconnect first: undone, it would show the
      // user online until the liveness sweep (a flaky network resuming and dropping at once).
      if (conn.closed && !conn.ended) await presence.disconnected(userId, sessionId);
    } catch (err) {
      log.warn({ err, userId }, 'presence not announced');
    }
  }

  function heartbeat(conn: Conn) {
    conn.lastBeat = now();
    send(conn, HEARTBEAT_ACK);
    // Ended (revoked, taken over) or closing: its session is being removed, and a late mark would bring it back.
    if (!conn.sessionId || conn.busy || conn.ended || conn.closed) return;
    const { sessionId, userId } = conn;
    Promise.all([store.touch(sessionId, userId as string), presence.heartbeat(userId as string, sessionId)]).catch((err) =>
      log.warn({ err }, 'heartbeat not recorded'),
    );
  }

  /** Counts a frame in the connection's window; false when it is over the limit. */
  function withinLimit(conn: Conn): boolean {
    const t = now();
    if (t - conn.windowStart >= config.GATEWAY_FRAME_WINDOW_MS) {
      conn.windowStart = t;
      conn.frames = 0;
    }
    conn.frames += 1;
    return conn.frames <= config.GATEWAY_FRAME_LIMIT;
  }

  function onMessage(conn: Conn, data: Buffer | ArrayBuffer | Buffer[], isBinary: boolean) {
    if (!withinLimit(conn)) return close(conn, CLOSE_CODES.RATE_LIMITED, 'Too many frames');
    const decoded = decodeFrame(data, isBinary);
    if (!decoded.ok) return close(conn, decoded.code, decoded.reason);
    const { frame } = decoded;
    if (frame.op === OP.HEARTBEAT) return heartbeat(conn);
    if (conn.sessionId || conn.busy) return close(conn, CLOSE_CODES.ALREADY_AUTHENTICATED, 'Already identified');
    conn.busy = true;
    const work = frame.op === OP.IDENTIFY ? identify(conn, frame.d.token) : resume(conn, frame.d);
    work
      .catch((err) => {
        log.warn({ err }, 'identify or resume failed');
        close(conn, CLOSE_CODES.UNKNOWN_ERROR, 'Try again');
      })
      .finally(() => {
        conn.busy = false;
      });
  }

  async function onClose(conn: Conn, code: number) {
    if (conn.closed) return;
    conn.closed = true;
    live.delete(conn);
    unregister(conn);
    if (!conn.sessionId || conn.ended) return;
    try {
      // A client that closes with 1000 or 1001 is done with the session (Discord's rule); any other
      // close (a drop, 4000) keeps it resumable for the window. Either only while this replica still
      // holds it: a RESUME elsewhere may have taken it before this close was handled (its kick not
      // here yet), and the session, connected there, must stay so.
      const held =
        code === 1000 || code === 1001
          ? await store.remove(conn.sessionId, conn.userId as string, node)
          : await store.detach(conn.sessionId, node);
      if (held) await presence.disconnected(conn.userId as string, conn.sessionId);
    } catch (err) {
      log.warn({ err }, 'could not record a closed socket');
    }
  }

  function open(ws: WebSocket) {
    const t = now();
    const conn: Conn = { ws, openedAt: t, lastBeat: t, windowStart: t, frames: 0, busy: false, lastSent: 0 };
    live.add(conn);
    ws.on('message', (data, isBinary) => onMessage(conn, data, isBinary));
    ws.on('close', (code) => void onClose(conn, code));
    ws.on('error', () => {});
    ws.send(helloFrame);
  }

  function revokeConn(conn: Conn) {
    conn.ended = 'revoked';
    close(conn, CLOSE_CODES.AUTHENTICATION_FAILED, 'Session revoked');
    if (conn.sessionId && conn.userId) {
      const { sessionId, userId } = conn;
      void store
        .remove(sessionId, userId)
        .then(() => presence.disconnected(userId, sessionId))
        .catch((err) => log.warn({ err }, 'could not end a revoked session'));
    }
  }

  /** Not identified in one interval: 4003; no heartbeat in 1.5 intervals: 4009. */
  function sweep() {
    const t = now();
    for (const conn of live) {
      if (!conn.sessionId && !conn.busy && t - conn.openedAt > interval)
        close(conn, CLOSE_CODES.NOT_AUTHENTICATED, 'Not identified in time');
      else if (t - conn.lastBeat > interval * 1.5) close(conn, CLOSE_CODES.SESSION_TIMED_OUT, 'No heartbeat');
    }
  }
  const sweeper = setInterval(sweep, Math.min(1_000, interval / 2));
  sweeper.unref();
  const presenceSweeper = setInterval(() => presence.sweep().catch((err) => log.warn({ err }, 'presence sweep failed')), interval);
  presenceSweeper.unref();
  const unwatch = socketMetrics.watchSockets({ connections: () => live.size, sessions: () => bySession.size });

  return {
    /** Resolves once this replica listens for its sessions' frames (when Redis first answers). */
    ready,
    /** Throws while sockets are refused (Redis has not answered since the start): a health check. */
    assertReady(): void {
      if (!listening) throw new Error("not subscribed to its sessions' frames yet (Redis)");
    },
    /**
     * Counts the upgrade in the General tier, then opens the socket (HELLO first). Answers the
     * status it gave: 101, or the refusal's. `headers` go on every answer (the request id).
     */
    async upgrade(req: IncomingMessage, socket: Duplex, head: Buffer, headers: Record<string, string> = {}): Promise<number> {
      socket.on('error', () => {});
      const path = (req.url ?? '/').split('?')[0]?.toLowerCase();
      if (path !== SOCKET_PATH) return rejectUpgrade(socket, 404, { error: 'Not found' }, headers);
      const verdict = await deps.limiter.hit({
        tier: 'general',
        subject: rateSubject(deps.clientIp(req.socket.remoteAddress, req.headers)),
      });
      const rateHeaders = { ...rateLimitHeaders(verdict), ...headers };
      if (!verdict.allowed) {
        const retry = Math.max(1, Math.ceil((verdict.resetAtMs - verdict.nowMs) / 1000));
        return rejectUpgrade(
          socket,
          429,
          { error: 'Too many requests, slow down and retry later' },
          { 'retry-after': String(retry), ...rateHeaders },
        );
      }
      if (!listening) {
        return rejectUpgrade(
          socket,
          503,
          { error: 'The real-time gateway is unavailable, retry later' },
          { 'retry-after': '5', ...rateHeaders },
        );
      }
      rateHeadersOf.set(req, rateHeaders);
      wss.handleUpgrade(req, socket, head, open);
      // ws refuses a malformed handshake at once, with a 400 of its own.
      return socket.writable ? 101 : 400;
    },
    /**
     * Closes every socket of a revoked token session with 4004, from memory first: a Redis that is
     * down or slow must not keep them open. Then the revocation is written to Redis (a few
     * attempts); when that fails this rejects, and this replica still refuses the session from memory.
     */
    async revoke(authSid: string): Promise<void> {
      setBounded(revokedHere, authSid, now() + REVOKED_MEMORY_MS, MAX_REVOKED_IN_MEMORY);
      for (const conn of byAuthSession.get(authSid) ?? []) revokeConn(conn);
      await rememberRevoked(authSid);
    },
    /** Shutting down: RECONNECT to every client, which resumes on another replica. */
    async shutdown(): Promise<void> {
      clearInterval(sweeper);
      clearInterval(presenceSweeper);
      unwatch();
      const closing = [...live].map((conn) => {
        send(conn, RECONNECT);
        close(conn, 1012, 'Reconnect');
        return onClose(conn, 1012);
      });
      await Promise.all(closing);
      await deps.subscriber.unsubscribe().catch(() => {});
    },
    /** How many sockets this replica holds (bench and tests). */
    size: () => live.size,
  };
}

export type SocketServer = ReturnType<typeof createSocketServer>;

/** Answers the upgrade request with `status` and closes the connection; returns the status. */
function rejectUpgrade(socket: Duplex, status: number, body: object, headers: Record<string, string> = {}): number {
  const text = JSON.stringify(body);
  const lines = [
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}`,
    'content-type: application/json; charset=utf-8',
    `content-length: ${Buffer.byteLength(text)}`,
    'connection: close',
    ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
  ];
  socket.end(`${lines.join('\r\n')}\r\n\r\n${text}`);
  return status;
}

/**
 * Subscribes once Redis answers: a Redis away at start must not stop the gateway (HTTP needs none
 * of it), only its sockets. ioredis renews the subscription after each later reconnect by itself.
 */
async function subscribeWhenUp(subscriber: Redis, channel: string, log: Logger): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      await subscriber.subscribe(channel);
      if (attempt > 0) log.info('Redis reachable: sockets are accepted');
      return;
    } catch (err) {
      if (subscriber.status === 'end') return;
      if (attempt === 0) log.warn({ err }, 'Redis not reachable: sockets are refused (503) until it is');
      if (subscriber.status !== 'ready') await new Promise((resolve) => subscriber.once('ready', resolve));
      else await wait(1_000);
    }
  }
}
