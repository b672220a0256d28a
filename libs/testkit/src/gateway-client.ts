import WebSocket from 'ws';

/** A frame as the gateway sends it. */
export interface Frame {
  op: number;
  // biome-ignore lint/suspicious/noExplicitAny: tests read whatever the frame holds and assert on it
  d: any;
  s: number | null;
  t: string | null;
}

/**
 * A real WebSocket client of the gateway for tests: it records every frame, heartbeats on its own
 * (unless told not to), and waits for frames or the close by predicate, never by time alone.
 */
export class GatewayClient {
  readonly frames: Frame[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;
  /** The headers of the upgrade's 101. */
  headers: Record<string, string | string[] | undefined> = {};
  heartbeatInterval = 0;
  private listeners = new Set<() => void>();
  private timer: NodeJS.Timeout | undefined;
  private closeInfo: { code: number; reason: string } | undefined;

  private constructor(readonly ws: WebSocket) {
    ws.on('upgrade', (res) => {
      this.headers = res.headers;
    });
    ws.on('message', (data) => {
      this.frames.push(JSON.parse(String(data)) as Frame);
      for (const l of this.listeners) l();
    });
    this.closed = new Promise((resolve) =>
      ws.on('close', (code, reason) => {
        clearInterval(this.timer);
        this.closeInfo = { code, reason: String(reason) };
        for (const l of this.listeners) l();
        resolve(this.closeInfo);
      }),
    );
    ws.on('error', () => {});
  }

  /** Opens a socket at `baseUrl` (http://...) and waits for HELLO. */
  static async connect(baseUrl: string, options: { ip?: string; heartbeat?: boolean } = {}): Promise<GatewayClient> {
    const url = `${baseUrl.replace(/^http/, 'ws')}/v1/gateway/ws`;
    const ws = new WebSocket(url, { headers: options.ip ? { 'x-forwarded-for': options.ip } : {} });
    const client = new GatewayClient(ws);
    const hello = await client.next((f) => f.op === 10);
    client.heartbeatInterval = hello.d.heartbeatInterval;
    if (options.heartbeat !== false) client.startHeartbeat();
    return client;
  }

  /** Heartbeats at half the interval: a loaded test machine must not miss one. */
  startHeartbeat(): void {
    this.timer = setInterval(() => this.send({ op: 1, d: this.lastSeq() }), this.heartbeatInterval / 2);
  }

  stopHeartbeat(): void {
    clearInterval(this.timer);
  }

  send(frame: unknown): void {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.send(typeof frame === 'string' ? frame : JSON.stringify(frame));
  }

  lastSeq(): number | null {
    const seqs = this.frames.filter((f) => f.op === 0).map((f) => f.s as number);
    return seqs.length ? Math.max(...seqs) : null;
  }

  dispatches(t?: string): Frame[] {
    return this.frames.filter((f) => f.op === 0 && (t === undefined || f.t === t));
  }

  /** The first frame (already received or coming) that matches; fails when the socket closes first or after `timeoutMs`. */
  next(match: (f: Frame) => boolean, timeoutMs = 10_000): Promise<Frame> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const found = this.frames.find(match);
        if (found) return done(() => resolve(found));
        if (this.closeInfo) return done(() => reject(new Error(`socket closed (${this.closeInfo?.code}) before the frame arrived`)));
      };
      const timer = setTimeout(() => done(() => reject(new Error('frame did not arrive in time'))), timeoutMs);
      const done = (then: () => void) => {
        clearTimeout(timer);
        this.listeners.delete(check);
        then();
      };
      this.listeners.add(check);
      check();
    });
  }

  /** The dispatch named `t` whose payload matches. */
  dispatch(t: string, match: (d: Frame['d']) => boolean = () => true, timeoutMs?: number): Promise<Frame> {
    return this.next((f) => f.op === 0 && f.t === t && match(f.d), timeoutMs);
  }

  async identify(token: string): Promise<Frame['d']> {
    this.send({ op: 2, d: { token } });
    return (await this.dispatch('READY')).d;
  }

  /** Waits for the close (fails after `timeoutMs`). */
  async closeCode(timeoutMs = 10_000): Promise<{ code: number; reason: string }> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('socket did not close in time')), timeoutMs);
    });
    try {
      return await Promise.race([this.closed, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Closes the socket. By default as a dropped client does, with a code that keeps the session
   * resumable (4000, as Discord's clients reconnect); 1000 or 1001 end the session.
   */
  close(code = 4000): void {
    this.stopHeartbeat();
    this.ws.close(code);
  }
}
