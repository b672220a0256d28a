import { CLOSE_CODES, type DispatchName, type DispatchPayloads, OP, type ReadyData } from '@chat/contracts';

/**
 * The WHATWG WebSocket surface this client uses: both the global WebSocket (browsers, Deno, Bun)
 * and the `ws` package provide it.
 */
export interface WebSocketLike {
  readonly readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  onmessage: ((event: { data: unknown }) => void) | null;
  onclose: ((event: { code: number; reason: string }) => void) | null;
  onerror: ((event: unknown) => void) | null;
}

/** Opens a WebSocket at `url`, sending `headers` with the upgrade where the platform allows it. */
export type WebSocketFactory = (url: string, headers: Record<string, string>) => WebSocketLike | Promise<WebSocketLike>;

/**
 * In Node the `ws` package (it sends the client's headers with the upgrade, which the global
 * WebSocket cannot); elsewhere the global WebSocket.
 */
export const defaultWebSocketFactory: WebSocketFactory = async (url, headers) => {
  if (typeof process !== 'undefined' && process.versions?.node) {
    const { WebSocket } = await import('ws');
    return new WebSocket(url, { headers, perMessageDeflate: false }) as unknown as WebSocketLike;
  }
  return new globalThis.WebSocket(url) as unknown as WebSocketLike;
};

/** One dispatch as it arrived: its name, sequence and typed payload. */
export interface Dispatch<T extends DispatchName = DispatchName> {
  t: T;
  s: number;
  d: DispatchPayloads[T];
}

export type DispatchListener<T extends DispatchName> = (d: DispatchPayloads[T], dispatch: Dispatch<T>) => void;

/**
 * Where the socket is: `connecting` (opening, waiting for HELLO), `identifying`, `resuming`,
 * `ready` (READY or RESUMED received), `reconnecting` (dropped, waiting before the next attempt),
 * `closed` (closed by close(), or by the gateway for good, e.g. a revoked session).
 */
export type SocketStatus = 'idle' | 'connecting' | 'identifying' | 'resuming' | 'ready' | 'reconnecting' | 'closed';

export interface SocketOptions {
  /** Where to open the socket (the client asks `GET /v1/gateway`). */
  url: () => Promise<string>;
  /** The current access token (IDENTIFY and RESUME carry it). */
  token: () => string | undefined;
  /**
   * Refreshes the token pair after a refused `stale` token: true when a new pair came, false when
   * the refresh token was refused; throws when the refresh failed for a passing reason.
   */
  refresh?: (stale: string) => Promise<boolean>;
  /** Headers of the upgrade request (Node only). */
  headers?: Record<string, string>;
  createWebSocket?: WebSocketFactory;
  /** The first wait before reconnecting after a drop, doubled per failed attempt (default 1 s, at most `maxReconnectDelayMs`, 30 s). */
  reconnectDelayMs?: number;
  maxReconnectDelayMs?: number;
  /** Jitter of heartbeats and reconnects (default Math.random); tests fix it. */
  random?: () => number;
}

/** Close codes after which reconnecting cannot help: the client sent something the gateway does not accept. */
const FATAL_CLOSES = new Set<number>([CLOSE_CODES.UNKNOWN_OPCODE, CLOSE_CODES.DECODE_ERROR, CLOSE_CODES.ALREADY_AUTHENTICATED]);
/** Close codes after which the session cannot be resumed: the next attempt identifies. */
const SESSION_LOST = new Set<number>([CLOSE_CODES.INVALID_SEQ]);
/** The close code this client uses to drop a socket it will resume (not 1000: the session lives on). */
const RESUME_CLOSE = 4900;

interface ServerFrame {
  op: number;
  d: unknown;
  s: number | null;
  t: string | null;
}

/**
 * The real-time socket of the gateway (DESIGN.md "Real-time events"): identifies with the client's
 * token, heartbeats at HELLO's interval (a beat without an ACK since the last one means the link
 * is dead), and on a drop or a RECONNECT opens again and RESUMEs from the last sequence it
 * received, so a dispatch sent meanwhile arrives once and in order; INVALID_SESSION that is not
 * resumable makes it identify afresh. Dispatches are typed by the contracts' schemas.
 */
export class ChatSocket {
  /** The session (READY's sessionId) this socket resumes after a drop. */
  sessionId: string | undefined;
  /** The last dispatch sequence received (HEARTBEAT and RESUME carry it). */
  seq: number | null = null;
  status: SocketStatus = 'idle';
  /** The last heartbeat's round trip, in milliseconds. */
  latencyMs: number | undefined;

  private ws: WebSocketLike | undefined;
  private readonly listeners = new Map<string, Set<(d: unknown, dispatch: Dispatch) => void>>();
  private readonly statusListeners = new Set<(status: SocketStatus, detail?: { code?: number; reason?: string }) => void>();
  private heartbeatTimer: ReturnType<typeof setTimeout> | undefined;
  private reconnectTimer: ReturnType<typeof setTimeout> | undefined;
  private acked = true;
  private beatSentAt = 0;
  private readonly pings: ((latencyMs: number) => void)[] = [];
  private failedAttempts = 0;
  private refreshedToken: string | undefined;
  /** The token of the last IDENTIFY or RESUME: the one a 4004 refused. */
  private sentToken: string | undefined;
  /** Counts close() calls: an opening begun before the last one leaves its socket unused. */
  private closings = 0;
  private ready: { promise: Promise<ReadyData>; resolve(r: ReadyData): void; reject(e: Error): void } | undefined;
  private readonly random: () => number;
  /** The socket's address, asked once and asked again after an attempt that never got HELLO. */
  private url: string | undefined;
  private helloSeen = false;

  constructor(private readonly options: SocketOptions) {
    this.random = options.random ?? Math.random;
  }

  /**
   * Opens the socket and identifies; resolves with READY's payload. Reconnects by itself from then
   * on, until close(). Rejects when the gateway refuses the client for good (authentication failed
   * and no refresh helped, a revoked session).
   */
  connect(): Promise<ReadyData> {
    if (this.ready && this.status !== 'closed') return this.ready.promise;
    let resolve!: (r: ReadyData) => void;
    let reject!: (e: Error) => void;
    const promise = new Promise<ReadyData>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    promise.catch(() => {});
    this.ready = { promise, resolve, reject };
    void this.open();
    return promise;
  }

  /** Listens to one dispatch by name (`'MESSAGE_CREATE'`), its payload typed by the contract; answers the unsubscribe. */
  on<T extends DispatchName>(t: T, listener: DispatchListener<T>): () => void {
    const set = this.listeners.get(t) ?? new Set();
    set.add(listener as (d: unknown, dispatch: Dispatch) => void);
    this.listeners.set(t, set);
    return () => set.delete(listener as (d: unknown, dispatch: Dispatch) => void);
  }

  /** Listens to every dispatch. */
  onDispatch(listener: (dispatch: Dispatch) => void): () => void {
    return this.on('*' as DispatchName, (_d, dispatch) => listener(dispatch));
  }

  /** Told of each change of status, with the close code and reason when a socket dropped. */
  onStatus(listener: (status: SocketStatus, detail?: { code?: number; reason?: string }) => void): () => void {
    this.statusListeners.add(listener);
    return () => this.statusListeners.delete(listener);
  }

  /** Sends a heartbeat now; resolves with the round trip once its HEARTBEAT_ACK arrives. */
  heartbeat(): Promise<number> {
    return new Promise((resolve) => {
      this.pings.push(resolve);
      this.beat();
    });
  }

  /** Drops the current socket and resumes on a new one (what a RECONNECT from the gateway does). */
  reconnect(): void {
    this.drop(0, { code: RESUME_CLOSE, reason: 'Reconnect requested' });
  }

  /**
   * Closes the socket for good: no reconnect, and the session ends (the gateway ends a session
   * whose socket the client closes with 1000), so a later connect() identifies afresh.
   */
  close(): void {
    this.closings += 1;
    this.end();
    this.setStatus('closed');
    this.ready?.reject(new Error('The socket was closed'));
  }

  private async open(): Promise<void> {
    const closings = this.closings;
    this.setStatus('connecting');
    let ws: WebSocketLike;
    try {
      this.url ??= await this.options.url();
      this.helloSeen = false;
      ws = await (this.options.createWebSocket ?? defaultWebSocketFactory)(this.url, this.options.headers ?? {});
    } catch (err) {
      if (closings !== this.closings) return;
      return this.scheduleReconnect({ reason: (err as Error).message });
    }
    if (this.status === 'closed' || closings !== this.closings) return ws.close(1000, 'Bye');
    this.ws = ws;
    ws.onmessage = (event) => this.onMessage(ws, event.data);
    ws.onclose = (event) => this.onClose(ws, event.code, event.reason);
    ws.onerror = () => {};
  }

  private onMessage(ws: WebSocketLike, data: unknown): void {
    if (ws !== this.ws) return;
    let frame: ServerFrame;
    try {
      frame = JSON.parse(String(data)) as ServerFrame;
    } catch {
      return;
    }
    switch (frame.op) {
      case OP.DISPATCH:
        this.onDispatchFrame(frame);
        break;
      case OP.HELLO:
        this.onHello((frame.d as { heartbeatInterval: number }).heartbeatInterval);
        break;
      case OP.HEARTBEAT_ACK:
        this.onHeartbeatAck();
        break;
      // The gateway may ask for a beat at once.
      case OP.HEARTBEAT:
        this.beat();
        break;
      case OP.RECONNECT:
        this.reconnect();
        break;
      case OP.INVALID_SESSION:
        this.onInvalidSession((frame.d as { resumable: boolean }).resumable);
        break;
    }
  }

  private onHello(interval: number): void {
    this.helloSeen = true;
    this.startHeartbeat(interval);
    const token = this.options.token();
    if (!token) this.fail(new Error('Sign in before opening the socket'));
    else if (this.sessionId && this.seq !== null) {
      this.setStatus('resuming');
      this.sentToken = token;
      this.send({ op: OP.RESUME, d: { token, sessionId: this.sessionId, seq: this.seq } });
    } else this.identify(token);
  }

  private identify(token: string): void {
    this.setStatus('identifying');
    this.sessionId = undefined;
    this.seq = null;
    this.sentToken = token;
    this.send({ op: OP.IDENTIFY, d: { token } });
  }

  private onInvalidSession(resumable: boolean): void {
    const token = this.options.token();
    if (resumable) this.reconnect();
    else if (!token) this.fail(new Error('Sign in before opening the socket'));
    else this.identify(token);
  }

  private onDispatchFrame(frame: ServerFrame): void {
    const s = frame.s as number;
    // A frame already received (a replay that overlaps what arrived before the drop) is dropped.
    if (this.seq !== null && s <= this.seq) return;
    this.seq = s;
    const dispatch = { t: frame.t, s, d: frame.d } as Dispatch;
    if (dispatch.t === 'READY') {
      const ready = dispatch.d as ReadyData;
      this.sessionId = ready.sessionId;
      this.becameReady();
      this.ready?.resolve(ready);
    } else if (dispatch.t === 'RESUMED') this.becameReady();
    for (const name of [dispatch.t, '*']) {
      for (const listener of this.listeners.get(name) ?? []) listener(dispatch.d, dispatch);
    }
  }

  private becameReady(): void {
    this.failedAttempts = 0;
    this.refreshedToken = undefined;
    this.setStatus('ready');
  }

  private onClose(ws: WebSocketLike, code: number, reason: string): void {
    if (ws !== this.ws) return;
    this.ws = undefined;
    this.stopHeartbeat();
    if (!this.helloSeen) this.url = undefined;
    if (FATAL_CLOSES.has(code)) this.fail(new Error(`The gateway closed the socket: ${code} ${reason}`));
    else if (code === CLOSE_CODES.AUTHENTICATION_FAILED) void this.afterAuthenticationFailed(code, reason);
    else {
      if (SESSION_LOST.has(code)) this.sessionId = undefined;
      this.scheduleReconnect({ code, reason });
    }
  }

  /**
   * A refused token: refreshed once and tried again; a second refusal (a revoked session) ends the
   * socket. The stale token is the one the socket sent, so that a refresh HTTP calls already made
   * for it is reused rather than repeated. A refresh that failed for a passing reason (the auth
   * service unavailable) keeps the pair: the socket tries again later, as after a drop.
   */
  private async afterAuthenticationFailed(code: number, reason: string): Promise<void> {
    const refused = new Error(`The gateway refused the session: ${code} ${reason}`);
    const stale = this.sentToken;
    if (stale === undefined || stale === this.refreshedToken || !this.options.refresh) return this.fail(refused);
    const closings = this.closings;
    // undefined: the refresh failed for a passing reason.
    const refreshed = await this.options.refresh(stale).catch(() => undefined);
    // Closed meanwhile: what comes next is a later connect()'s.
    if (closings !== this.closings) return;
    if (refreshed === undefined) return this.scheduleReconnect({ code, reason });
    if (!refreshed) return this.fail(refused);
    this.refreshedToken = this.options.token();
    this.scheduleReconnect({ code, reason }, 0);
  }

  /** Leaves the current socket (it stays silent from now on) and opens another after `delayMs`. */
  private drop(delayMs: number, detail: { code: number; reason: string }): void {
    const ws = this.ws;
    if (!ws) return;
    this.ws = undefined;
    this.stopHeartbeat();
    ws.close(detail.code, detail.reason);
    this.scheduleReconnect(detail, delayMs);
  }

  private scheduleReconnect(detail: { code?: number; reason?: string }, delayMs?: number): void {
    if (this.status === 'closed') return;
    this.setStatus('reconnecting', detail);
    const base = this.options.reconnectDelayMs ?? 1_000;
    const wait =
      delayMs ?? Math.min(this.options.maxReconnectDelayMs ?? 30_000, base * 2 ** this.failedAttempts) * (0.5 + this.random() / 2);
    this.failedAttempts += 1;
    clearTimeout(this.reconnectTimer);
    this.reconnectTimer = setTimeout(() => void this.open(), wait);
  }

  /** The first beat at a random point of the interval (clients do not beat in step), then one per interval. */
  private startHeartbeat(interval: number): void {
    this.stopHeartbeat();
    this.acked = true;
    const tick = (wait: number) => {
      this.heartbeatTimer = setTimeout(() => {
        // No ACK since the last beat: the link is dead even if the socket looks open.
        if (!this.acked) return this.drop(0, { code: RESUME_CLOSE, reason: 'No heartbeat acknowledged' });
        this.beat();
        tick(interval);
      }, wait);
    };
    tick(interval * this.random());
  }

  private stopHeartbeat(): void {
    clearTimeout(this.heartbeatTimer);
    this.heartbeatTimer = undefined;
  }

  private beat(): void {
    this.acked = false;
    this.beatSentAt = Date.now();
    this.send({ op: OP.HEARTBEAT, d: this.seq });
  }

  private onHeartbeatAck(): void {
    this.acked = true;
    this.latencyMs = Date.now() - this.beatSentAt;
    for (const resolve of this.pings.splice(0)) resolve(this.latencyMs);
  }

  private send(frame: { op: number; d: unknown }): void {
    // 1: OPEN in both the WHATWG WebSocket and ws.
    if (this.ws?.readyState === 1) this.ws.send(JSON.stringify(frame));
  }

  private fail(error: Error): void {
    this.end();
    this.setStatus('closed', { reason: error.message });
    this.ready?.reject(error);
  }

  /** Stops every timer, closes the socket with 1000 and forgets the session, which that close ends. */
  private end(): void {
    clearTimeout(this.reconnectTimer);
    this.stopHeartbeat();
    const ws = this.ws;
    this.ws = undefined;
    ws?.close(1000, 'Bye');
    this.sessionId = undefined;
    this.seq = null;
    this.sentToken = undefined;
    this.refreshedToken = undefined;
    this.failedAttempts = 0;
  }

  private setStatus(status: SocketStatus, detail?: { code?: number; reason?: string }): void {
    this.status = status;
    for (const listener of this.statusListeners) listener(status, detail);
  }
}
