import { createServer, type Socket, connect as tcpConnect } from 'node:net';

/** A TCP proxy in front of one backing part, whose link a test can cut or stall. */
export interface TcpProxy {
  /** Where clients connect instead of the target (127.0.0.1). */
  port: number;
  /** `scheme://127.0.0.1:port`, for a connection URL. */
  url(scheme: string, path?: string): string;
  /** Drops every connection, and drops each new one at once until restore(). */
  cut(): void;
  /** Stops forwarding bytes both ways (connections stay open and silent) until restore(). */
  stall(): void;
  /** Stops forwarding what the target sends, while what clients send still reaches it, until restore(). */
  hold(): void;
  /** Forwards again: held bytes flow on, new connections are accepted. */
  restore(): void;
  /** How many connections are open now. */
  connections(): number;
  close(): Promise<void>;
}

/**
 * Listens on a free port of 127.0.0.1 and relays each connection to `target`. Only the clients
 * given this proxy's address are affected by a fault: a backing part that other tests share is
 * never stopped or touched.
 */
export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  let mode: 'open' | 'cut' | 'stalled' | 'held' = 'open';
  const sockets = new Set<Socket>();
  const upstreams = new WeakSet<Socket>();
  // Whether what this socket reads waits instead of being forwarded.
  const silenced = (socket: Socket) => mode === 'stalled' || (mode === 'held' && upstreams.has(socket));
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    if (silenced(socket)) socket.pause();
  };
  const server = createServer((client) => {
    if (mode === 'cut') return void client.destroy();
    const upstream = tcpConnect(target.port, target.host);
    upstreams.add(upstream);
    track(client);
    track(upstream);
    relay(client, upstream, silenced);
    relay(upstream, client, silenced);
  });
  const silence = (next: 'stalled' | 'held') => {
    mode = next;
    for (const socket of sockets) if (silenced(socket)) socket.pause();
  };
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const port = (server.address() as { port: number }).port;

  return {
    port,
    url: (scheme, path = '') => `${scheme}://127.0.0.1:${port}${path}`,
    cut() {
      mode = 'cut';
      for (const socket of sockets) socket.destroy();
    },
    stall: () => silence('stalled'),
    hold: () => silence('held'),
    restore() {
      mode = 'open';
      for (const socket of sockets) socket.resume();
    },
    connections: () => sockets.size / 2,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Copies `from` into `to` chunk by chunk (a paused `from` holds its bytes); either end closing closes both. */
function relay(from: Socket, to: Socket, silenced: (socket: Socket) => boolean): void {
  from.on('data', (chunk) => {
    if (!to.write(chunk)) {
      from.pause();
      to.once('drain', () => {
        if (!silenced(from)) from.resume();
      });
    }
  });
  from.once('close', () => to.destroy());
}
