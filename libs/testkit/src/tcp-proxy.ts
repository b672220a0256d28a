import { createServer, type Socket, connect as tcpConnect } from 'node:net';

/** A TCP forwarder a test can cut and restore: a backing part made unreachable for one platform only. */
export interface TcpProxy {
  /** host:port to give the processes instead of the target's. */
  address: string;
  /** Drops every connection and refuses new ones until restore(). */
  cut(): void;
  restore(): void;
  close(): Promise<void>;
}

/** Forwards 127.0.0.1:<free port> to `target` (host:port). */
export async function startTcpProxy(target: string): Promise<TcpProxy> {
  const [host, port] = [target.slice(0, target.lastIndexOf(':')), Number(target.slice(target.lastIndexOf(':') + 1))];
  const open = new Set<Socket>();
  let cut = false;
  const server = createServer((client) => {
    if (cut) {
      client.destroy();
      return;
    }
    const upstream = tcpConnect(port, host);
    for (const socket of [client, upstream]) {
      open.add(socket);
      socket.on('close', () => open.delete(socket));
      socket.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port: own } = server.address() as { port: number };
  return {
    address: `127.0.0.1:${own}`,
    cut() {
      cut = true;
      for (const socket of open) socket.destroy();
    },
    restore() {
      cut = false;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of open) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
