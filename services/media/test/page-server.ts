import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type Page = (req: IncomingMessage, res: ServerResponse) => void;

/** A local HTTP server with crafted pages, on 127.0.0.1 and a free port; counts the hits per path. */
export async function startPageServer(pages: Record<string, Page>) {
  const hits = new Map<string, number>();
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    hits.set(path, (hits.get(path) ?? 0) + 1);
    const page = pages[path];
    if (page) page(req, res);
    else res.writeHead(404, { 'content-type': 'text/plain' }).end('no such page');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    port,
    origin: `http://127.0.0.1:${port}`,
    pages,
    hits: (path: string) => hits.get(path) ?? 0,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export const html =
  (body: string, contentType = 'text/html; charset=utf-8'): Page =>
  (_req, res) =>
    res.writeHead(200, { 'content-type': contentType }).end(body);

export const redirect =
  (location: string, status = 302): Page =>
  (_req, res) =>
    res.writeHead(status, { location }).end();
