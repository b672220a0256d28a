import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** What the proxy does with one request. */
export type Fault =
  | { kind: 'pass' }
  /** Answers `status` (and `body`) without forwarding: nothing was done. */
  | { kind: 'refuse'; status: number; headers?: Record<string, string>; body?: unknown }
  /** Forwards, waits for the answer, then answers `status` instead: the outcome is unknown to the client. */
  | { kind: 'lose'; status: number }
  /** Forwards, waits for the answer, then resets the client's connection without answering. */
  | { kind: 'reset' };

export interface SeenRequest {
  method: string;
  /** The path, without the query. */
  path: string;
  idempotencyKey: string | undefined;
}

/**
 * An HTTP proxy in the test's process between a client and `target` that fails the requests a test
 * names (a 502, 503 or 504, a lost answer, a reset connection): the platform cannot be made to
 * fail on demand. It records every request it saw.
 */
export interface FaultProxy {
  /** The proxy's origin, the client's baseUrl. */
  url: string;
  /** The requests seen since the last clear(), in order. */
  seen: SeenRequest[];
  /** The n-th request of `method path` (from 1) meets `faults[n-1]`; the others pass. Replaces earlier injections. */
  inject(method: string, path: string, ...faults: Fault[]): void;
  /** The requests of `method path` seen. */
  requests(method: string, path: string): SeenRequest[];
  /** Forgets the injections and the requests seen. */
  clear(): void;
  close(): Promise<void>;
}

const HOP_BY_HOP = ['host', 'connection', 'content-length', 'transfer-encoding', 'keep-alive'];

export async function startFaultProxy(target: string): Promise<FaultProxy> {
  let injected: { method: string; path: string; faults: Fault[] } | undefined;
  const seen: SeenRequest[] = [];

  const faultFor = (request: SeenRequest): Fault => {
    if (!injected || injected.method !== request.method || injected.path !== request.path) return { kind: 'pass' };
    const n = seen.filter((s) => s.method === request.method && s.path === request.path).length;
    return injected.faults[n - 1] ?? { kind: 'pass' };
  };

  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const request: SeenRequest = {
      method: req.method ?? 'GET',
      path: (req.url ?? '/').split('?')[0] ?? '/',
      idempotencyKey: req.headers['idempotency-key'] as string | undefined,
    };
    seen.push(request);
    const fault = faultFor(request);
    try {
      if (fault.kind === 'refuse') return answer(res, fault.status, fault.headers, fault.body ?? { error: `Injected ${fault.status}` });
      const upstream = await forward(target, req, Buffer.concat(chunks));
      if (fault.kind === 'pass') return relay(res, upstream);
      await upstream.arrayBuffer();
      if (fault.kind === 'lose') return answer(res, fault.status, {}, { error: `Injected ${fault.status}` });
      req.socket.destroy();
    } catch (err) {
      answer(res, 599, {}, { error: `The fault proxy failed: ${(err as Error).message}` });
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));

  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    inject: (method, path, ...faults) => {
      injected = { method, path, faults };
    },
    requests: (method, path) => seen.filter((s) => s.method === method && s.path === path),
    clear: () => {
      injected = undefined;
      seen.length = 0;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function forward(target: string, req: IncomingMessage, body: Buffer): Promise<Response> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (!HOP_BY_HOP.includes(name) && value !== undefined) headers[name] = Array.isArray(value) ? value.join(',') : value;
  }
  const method = req.method ?? 'GET';
  return fetch(new URL(req.url ?? '/', target), {
    method,
    headers,
    body: method === 'GET' || method === 'HEAD' ? undefined : body,
    redirect: 'manual',
  });
}

async function relay(res: ServerResponse, upstream: Response): Promise<void> {
  const headers: Record<string, string> = {};
  // fetch decoded the body and knows its own framing.
  upstream.headers.forEach((value, name) => {
    if (!['content-encoding', 'content-length', 'transfer-encoding', 'connection'].includes(name)) headers[name] = value;
  });
  const body = Buffer.from(await upstream.arrayBuffer());
  res.writeHead(upstream.status, headers).end(body);
}

function answer(res: ServerResponse, status: number, headers: Record<string, string> = {}, body: unknown = undefined): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
}
