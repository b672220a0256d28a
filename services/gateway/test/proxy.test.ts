import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { createTestIssuer, freePort, sendRaw, startGateway } from './helpers.ts';

// An upstream whose answers the tests choose per path, on real HTTP: the gateway forwards small
// answers whole and streams large ones, and both must arrive byte for byte.
const large = randomBytes(300 * 1024);
const arrivals: number[] = [];
const answers: Record<string, (req: IncomingMessage, res: ServerResponse) => void> = {
  '/v1/users/small': (_req, res) => {
    const body = JSON.stringify({ ok: true });
    res.writeHead(201, { 'content-type': 'application/json', 'content-length': body.length, 'x-upstream': 'yes' }).end(body);
  },
  '/v1/users/large': (_req, res) => res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(large),
  '/v1/users/chunked': (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.write('first,');
    setTimeout(() => res.end('second'), 20);
  },
  '/v1/users/empty': (_req, res) => res.writeHead(204).end(),
  // A 304 may state the length of the representation it stands for.
  '/v1/users/unchanged': (_req, res) => res.writeHead(304, { etag: '"v1"', 'content-length': '11' }).end(),
  '/v1/users/sandboxed': (_req, res) =>
    res.writeHead(200, { 'content-type': 'text/html', 'content-security-policy': 'sandbox' }).end('<p>hi</p>'),
  '/v1/users/broken': (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' });
    res.write('{"partial":');
    setTimeout(() => res.socket?.destroy(), 20);
  },
  '/v1/users/slow': (_req, res) => setTimeout(() => res.writeHead(200).end('late'), 1_500),
  // Records what reached the service, and when: the tests of request bodies look at it.
  '/v1/users/echo': (req, res) => {
    arrivals.push(Date.now());
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () =>
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ got: Buffer.concat(chunks).toString(), expect: req.headers.expect ?? null })),
    );
  },
  // The request arrived whole (the service may have acted on it); the connection drops before any answer.
  '/v1/users/hangup': (req, res) => {
    req.resume();
    req.once('end', () => res.socket?.destroy());
  },
};
const upstream = createServer((req, res) => (answers[req.url ?? ''] ?? ((_q, r) => r.writeHead(404).end()))(req, res));
await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
const upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
const issuer = await createTestIssuer();
// Music points at a port nothing listens on: its connections are refused.
const refusingUrl = `http://127.0.0.1:${await freePort()}`;
const gateway = await startGateway({
  upstreamUrl,
  keys: issuer.keys,
  env: {
    UPSTREAM_TIMEOUT_MS: '500',
    BODY_IDLE_TIMEOUT_MS: '300',
    MUSIC_URL: refusingUrl,
  },
});
const token = await issuer.sign(crypto.randomUUID());
/** The gateway on a real port (once): what raw sockets and fetch talk to. */
let address: Promise<string> | undefined;
const listening = () => {
  address ??= gateway.app.listen({ port: 0, host: '127.0.0.1' });
  return address;
};
/** Writes `parts` to a raw connection to the gateway (see sendRaw). */
const raw = async (parts: string[], pauseMs = 0, waitMs = 3_000) => sendRaw(await listening(), parts, pauseMs, waitMs);
const get = (url: string, method: 'GET' | 'HEAD' = 'GET') =>
  gateway.app.inject({ method, url, headers: { authorization: `Bearer ${token}` } });

afterAll(async () => {
  await gateway.close();
  upstream.closeAllConnections();
  await new Promise((resolve) => upstream.close(resolve));
});

describe('forwarding answers', () => {
  it('passes a small answer on whole: status, headers and body, plus the edge headers', async () => {
    const res = await get('/v1/users/small');
    expect(res.statusCode).toBe(201);
    expect(res.json()).toEqual({ ok: true });
    expect(res.headers['x-upstream']).toBe('yes');
    expect(res.headers['content-length']).toBe('11');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['x-ratelimit-limit']).toBe('300');
  });

  it('streams an answer larger than the buffered size through byte for byte', async () => {
    const res = await get('/v1/users/large');
    expect(res.statusCode).toBe(200);
    expect(res.rawPayload.equals(large)).toBe(true);
  });

  it('streams an answer of unknown length (chunked) through', async () => {
    const res = await get('/v1/users/chunked');
    expect(res.statusCode).toBe(200);
    expect(res.payload).toBe('first,second');
  });

  it('passes a 204 and a 304 on without a body, and a HEAD with the headers only', async () => {
    const empty = await get('/v1/users/empty');
    expect(empty.statusCode).toBe(204);
    expect(empty.payload).toBe('');
    const unchanged = await get('/v1/users/unchanged');
    expect(unchanged.statusCode).toBe(304);
    expect(unchanged.headers.etag).toBe('"v1"');
    expect(unchanged.payload).toBe('');
    const head = await get('/v1/users/small', 'HEAD');
    expect(head.statusCode).toBe(201);
    expect(head.headers['content-length']).toBe('11');
    expect(head.payload).toBe('');
  });

  it("keeps a service's own content security policy (media's sandbox) over the edge's", async () => {
    const res = await get('/v1/users/sandboxed');
    expect(res.headers['content-security-policy']).toBe('sandbox');
    expect(res.payload).toBe('<p>hi</p>');
  });

  it('answers 502 {"error"} when the service breaks off an answer it had started', async () => {
    const res = await get('/v1/users/broken');
    expect(res.statusCode).toBe(502);
    expect(res.json()).toEqual({ error: 'The auth service broke off its answer' });
  });

  it('answers 504 {"error"} when the service does not answer within UPSTREAM_TIMEOUT_MS', async () => {
    const res = await get('/v1/users/slow');
    expect(res.statusCode).toBe(504);
    expect(res.json()).toEqual({ error: 'The auth service did not answer in time' });
  });

  it('answers 503 {"error"} when the service refuses the connection: nothing reached it', async () => {
    // Over a real socket: the refused hop must not tear down the client's connection with it.
    const res = await fetch(`${await listening()}/v1/music/play`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ channelId: crypto.randomUUID() }),
    });
    expect(res.status).toBe(503);
    expect(await res.json()).toEqual({ error: 'The music service is unavailable' });
  });

  it('answers 502 {"error"}, not 503, when the request was sent and the connection dropped before an answer', async () => {
    const res = await gateway.app.inject({
      method: 'POST',
      url: '/v1/users/hangup',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      payload: { name: 'x' },
    });
    expect(res.statusCode).toBe(502);
    expect(res.json()).toEqual({ error: 'The auth service closed the connection without an answer' });
  });
});

describe('request bodies and connection headers', () => {
  const head = (length: number, extra = '') =>
    `POST /v1/users/echo HTTP/1.1\r\nhost: gw\r\nauthorization: Bearer ${token}\r\ncontent-type: application/json\r\ncontent-length: ${length}\r\nconnection: close\r\n${extra}\r\n`;

  it('reads a body whole before the service is asked: a client sending it slowly holds no connection to the service', async () => {
    arrivals.length = 0;
    const body = JSON.stringify({ content: 'x'.repeat(40) });
    const half = body.length / 2;
    let sentRestAt = 0;
    const answer = raw([head(body.length) + body.slice(0, half), body.slice(half)], 200).then((text) => text);
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(arrivals).toEqual([]);
    sentRestAt = Date.now();
    const text = await answer;
    expect(text).toMatch(/^HTTP\/1\.1 200 /);
    expect(text).toContain(JSON.stringify({ got: body, expect: null }));
    expect(arrivals).toHaveLength(1);
    expect(arrivals[0]).toBeGreaterThanOrEqual(sentRestAt - 100);
  });

  it('answers 408 {"error"} to a body that stops arriving, and the service never hears of it', async () => {
    arrivals.length = 0;
    const text = await raw([`${head(60)}{"content":"only the st`]);
    expect(text).toMatch(/^HTTP\/1\.1 408 /);
    expect(text).toContain('{"error":"The request body stopped arriving"}');
    expect(arrivals).toEqual([]);
  });

  it('forwards a request that asks for 100-continue, or names hop-by-hop headers, without them (they answered a false 502)', async () => {
    const res = await gateway.app.inject({
      method: 'POST',
      url: '/v1/users/echo',
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': 'application/json',
        expect: '100-continue',
        'keep-alive': 'timeout=5',
        upgrade: 'h2c',
      },
      payload: { content: 'hi' },
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ got: '{"content":"hi"}', expect: null });
  });

  it("honours a client's Connection: close on a proxied answer", async () => {
    const text = await raw([`GET /v1/users/small HTTP/1.1\r\nhost: gw\r\nauthorization: Bearer ${token}\r\nconnection: close\r\n\r\n`]);
    expect(text).toMatch(/^HTTP\/1\.1 201 /);
    expect(text.toLowerCase()).toContain('connection: close');
    expect(text).toContain('{"ok":true}');
  });
});

describe('requests refused before any hook runs', () => {
  const answerOf = (text: string) => {
    const [head = '', body = ''] = text.split('\r\n\r\n');
    return { status: head.split(' ')[1], head: head.toLowerCase(), body };
  };

  it('answer {"error"} with the security headers, and close the connection', async () => {
    const cases: [string, string, string][] = [
      [`GET /v1/users/%zz HTTP/1.1\r\nhost: gw\r\nconnection: close\r\n\r\n`, '400', 'Malformed URL'],
      ['GET /v1/auth/jwks HTTP/1.1\r\nhost: gw\r\nx-folded: a\r\n  b\r\n\r\n', '400', 'Malformed HTTP request'],
      ['GET /v1/auth/jwks HTTP/1.1\r\nx-request-id: hostless\r\n\r\n', '400', 'A Host header is required'],
      [`GET /v1/auth/jwks HTTP/1.1\r\nhost: gw\r\nx-big: ${'a'.repeat(20_000)}\r\n\r\n`, '431', 'Request header fields too large'],
    ];
    for (const [bytes, status, error] of cases) {
      const answer = answerOf(await raw([bytes]));
      expect({ status: answer.status, body: answer.body }, bytes.slice(0, 40)).toEqual({ status, body: JSON.stringify({ error }) });
      expect(answer.head).toContain('x-content-type-options: nosniff');
      expect(answer.head).toContain("content-security-policy: default-src 'none'");
    }
  });
});
