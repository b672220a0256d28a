import { connect } from 'node:net';
import { gzipSync } from 'node:zlib';
import { defineRoute } from '@chat/contracts';
import { createTestIssuer } from '@chat/testkit';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { AppError } from '../src/errors.ts';
import { contextOf, createHttpApp, IDLE_DRAIN_MS, route } from '../src/http.ts';
import { captureLogs } from './logs.ts';

const Widget = z.object({ id: z.string(), name: z.string(), size: z.number().int() });

const widgets = {
  create: defineRoute({
    method: 'POST',
    path: '/v1/widgets',
    service: 'music',
    summary: 'Create a widget',
    auth: false,
    body: z.object({ name: z.string().min(1), size: z.number().int().positive(), password: z.string().optional() }),
    status: 201,
    response: Widget,
  }),
  get: defineRoute({
    method: 'GET',
    path: '/v1/widgets/:widgetId',
    service: 'music',
    summary: 'A widget, as its owner sees it',
    params: z.object({ widgetId: z.uuid() }),
    query: z.object({ verbose: z.enum(['yes', 'no']).optional() }),
    status: 200,
    response: Widget,
  }),
  remove: defineRoute({
    method: 'DELETE',
    path: '/v1/widgets/:widgetId',
    service: 'music',
    summary: 'Delete a widget',
    auth: false,
    params: z.object({ widgetId: z.uuid() }),
    status: 204,
    response: null,
  }),
  catalog: defineRoute({
    method: 'GET',
    path: '/v1/catalog',
    service: 'music',
    summary: 'The public catalogue, which caches may keep',
    auth: false,
    status: 200,
    response: z.array(Widget),
  }),
  fail: defineRoute({
    method: 'POST',
    path: '/v1/failures/:kind',
    service: 'music',
    summary: 'Throws what it is told to',
    auth: false,
    params: z.object({ kind: z.enum(['plain', 'conflict', 'unavailable', 'drift']) }),
    status: 200,
    response: Widget,
  }),
};

const WIDGET_ID = '0190a6d2-6f1e-7c3a-8b4e-2f5d6c7b8a90';
const SECRET_PASSWORD = 'hunter2-very-secret';
const DATABASE_CAUSE = 'connection to 10.0.0.7 refused by pg_hba';

const logs = captureLogs();
const issuer = await createTestIssuer();
const tokens = issuer.verifier();
const app = createHttpApp({ log: logs.log, tokens, bodyLimit: 2_048 });
const seenRequestIds: string[] = [];

route(app, widgets.create, async (req) => {
  // A careless domain function logging the whole body: redaction must still hide the password.
  req.log.info({ body: req.body, headers: req.headers }, 'creating widget');
  return { id: 'w1', name: req.body.name, size: req.body.size };
});
route(app, widgets.get, async (req) => {
  seenRequestIds.push(contextOf(req).requestId);
  // A row with more columns than the record names: the answer must not carry them.
  return { id: req.params.widgetId, name: `owned by ${req.user.id}`, size: 1, password_hash: 'argon2-secret' } as never;
});
route(app, widgets.remove, async () => undefined);
route(app, widgets.catalog, async (_req, reply) => {
  reply.header('cache-control', 'public, max-age=300');
  return [];
});
route(app, widgets.fail, async (req) => {
  switch (req.params.kind) {
    case 'plain':
      throw new Error(DATABASE_CAUSE);
    case 'conflict':
      throw new AppError(409, 'Widget name already taken');
    case 'unavailable':
      throw new AppError(503, `Database unavailable: ${DATABASE_CAUSE}`);
    case 'drift':
      return { id: 'w1', name: 'no size' } as never;
  }
});
afterAll(() => app.close());

function expectErrorBody(res: LightMyRequestResponse, status: number): string {
  expect(res.statusCode).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  const body = res.json() as Record<string, unknown>;
  expect(Object.keys(body)).toEqual(['error']);
  expect(typeof body.error).toBe('string');
  return body.error as string;
}

const postJson = (url: string, payload: unknown, headers: Record<string, string> = {}) =>
  app.inject({ method: 'POST', url, headers: { 'content-type': 'application/json', ...headers }, payload: JSON.stringify(payload) });

describe('createHttpApp and route', () => {
  it('answers a valid request with the contract status and body', async () => {
    const res = await postJson('/v1/widgets', { name: 'gear', size: 3 });
    expect(res.statusCode).toBe(201);
    expect(res.json()).toEqual({ id: 'w1', name: 'gear', size: 3 });
  });

  it('answers 204 with no body when the contract has no response', async () => {
    const res = await app.inject({ method: 'DELETE', url: `/v1/widgets/${WIDGET_ID}` });
    expect(res.statusCode).toBe(204);
    expect(res.body).toBe('');
  });

  it('answers 400 naming the field when the body breaks its schema', async () => {
    const error = expectErrorBody(await postJson('/v1/widgets', { name: 'gear', size: 'big' }), 400);
    expect(error).toMatch(/^body\.size: /);
  });

  it('answers 400 naming a missing field', async () => {
    const error = expectErrorBody(await postJson('/v1/widgets', { size: 1 }), 400);
    expect(error).toMatch(/^body\.name: /);
  });

  it('answers 400 naming a bad path parameter and a bad query parameter', async () => {
    const token = await issuer.sign('user-1');
    const auth = { authorization: `Bearer ${token}` };
    const badParam = await app.inject({ method: 'GET', url: '/v1/widgets/not-a-uuid', headers: auth });
    expect(expectErrorBody(badParam, 400)).toMatch(/^path\.widgetId: /);
    const badQuery = await app.inject({ method: 'GET', url: `/v1/widgets/${WIDGET_ID}?verbose=maybe`, headers: auth });
    expect(expectErrorBody(badQuery, 400)).toMatch(/^query\.verbose: /);
  });

  it('answers 400 to malformed JSON and to an empty JSON body', async () => {
    const malformed = await app.inject({
      method: 'POST',
      url: '/v1/widgets',
      headers: { 'content-type': 'application/json' },
      payload: '{"name": "gear",',
    });
    expect(expectErrorBody(malformed, 400)).toMatch(/malformed json/i);
    const empty = await app.inject({ method: 'POST', url: '/v1/widgets', headers: { 'content-type': 'application/json' }, payload: '' });
    expectErrorBody(empty, 400);
  });

  it('answers 400 to a prototype-poisoning body', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/v1/widgets',
      headers: { 'content-type': 'application/json' },
      payload: '{"name":"gear","size":1,"__proto__":{"admin":true}}',
    });
    expectErrorBody(res, 400);
  });

  it('answers 400 to a body whose escapes spell a lone surrogate, in a value or a key, and takes escaped pairs', async () => {
    const post = (payload: string) =>
      app.inject({ method: 'POST', url: '/v1/widgets', headers: { 'content-type': 'application/json' }, payload });
    for (const payload of ['{"name":"x\\ud800y","size":1}', '{"name":"\\uDC00","size":1}', '{"name":"g","size":1,"\\ud83d":1}']) {
      expect(expectErrorBody(await post(payload), 400), payload).toBe(
        'body: text must be valid Unicode (an escape spells a lone surrogate)',
      );
    }
    const pair = await post('{"name":"gear \\ud83d\\ude00","size":1}');
    expect(pair.statusCode).toBe(201);
    expect(pair.json()).toMatchObject({ name: 'gear 😀' });
  });

  it('answers 415 to a body that is not JSON', async () => {
    const res = await app.inject({ method: 'POST', url: '/v1/widgets', headers: { 'content-type': 'text/xml' }, payload: '<widget/>' });
    expect(expectErrorBody(res, 415)).toMatch(/content-type/i);
  });

  it('answers 415 to a text/plain body, as to any other media type that is not JSON', async () => {
    for (const type of ['text/plain', 'text/plain; charset=utf-8']) {
      const res = await app.inject({
        method: 'POST',
        url: '/v1/widgets',
        headers: { 'content-type': type },
        payload: '{"name":"gear","size":1}',
      });
      expect(expectErrorBody(res, 415), type).toBe('Unsupported Content-Type; send application/json');
    }
  });

  it('answers 415 to JSON in a charset other than UTF-8, and takes UTF-8 named in any letter case', async () => {
    const latin1 = Buffer.concat([Buffer.from('{"name":"caf'), Buffer.from([0xe9]), Buffer.from('","size":1}')]);
    for (const type of ['application/json; charset=latin1', 'application/json;charset="ISO-8859-1"', 'application/json; charset=utf-16']) {
      const res = await app.inject({ method: 'POST', url: '/v1/widgets', headers: { 'content-type': type }, payload: latin1 });
      expect(expectErrorBody(res, 415), type).toMatch(/charset/i);
    }
    for (const type of ['application/json; charset=UTF-8', 'Application/JSON;charset=utf-8']) {
      const res = await app.inject({
        method: 'POST',
        url: '/v1/widgets',
        headers: { 'content-type': type },
        payload: '{"name":"café","size":1}',
      });
      expect({ type, status: res.statusCode, body: res.json() }).toEqual({ type, status: 201, body: { id: 'w1', name: 'café', size: 1 } });
    }
  });

  it('answers 415 to a compressed JSON body (RFC 7694), and takes one sent as identity', async () => {
    const json = '{"name":"zipped","size":1}';
    const zipped = await app.inject({
      method: 'POST',
      url: '/v1/widgets',
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
      payload: gzipSync(json),
    });
    expect(expectErrorBody(zipped, 415)).toBe('Unsupported Content-Encoding; send the body uncompressed');
    const plain = await app.inject({
      method: 'POST',
      url: '/v1/widgets',
      headers: { 'content-type': 'application/json', 'content-encoding': 'identity' },
      payload: json,
    });
    expect(plain.statusCode).toBe(201);
  });

  it('answers 400 to a JSON body whose bytes are not UTF-8, rather than reading U+FFFD', async () => {
    for (const bad of [[0xe9], [0xe0, 0xa4], [0xed, 0xa0, 0x80], [0xc0, 0xaf]]) {
      const payload = Buffer.concat([Buffer.from('{"name":"caf'), Buffer.from(bad), Buffer.from('","size":1}')]);
      const res = await app.inject({ method: 'POST', url: '/v1/widgets', headers: { 'content-type': 'application/json' }, payload });
      expect(expectErrorBody(res, 400), String(bad)).toBe('body: text must be valid UTF-8');
    }
  });

  it('takes an empty body with Content-Type: application/json as no body: a route without one answers, one that needs one says so', async () => {
    const headers = { 'content-type': 'application/json', 'content-length': '0' };
    const bodiless = await app.inject({ method: 'DELETE', url: `/v1/widgets/${WIDGET_ID}`, headers, payload: '' });
    expect({ status: bodiless.statusCode, body: bodiless.body }).toEqual({ status: 204, body: '' });
    const needsOne = await app.inject({ method: 'POST', url: '/v1/widgets', headers, payload: '' });
    expect(expectErrorBody(needsOne, 400)).toMatch(/^body: /);
  });

  it('marks every answer Cache-Control: no-store, errors too, unless its route set its own', async () => {
    const created = await postJson('/v1/widgets', { name: 'gear', size: 3 });
    const refused = await postJson('/v1/widgets', { name: 'gear' });
    const unknown = await app.inject({ method: 'GET', url: '/v1/nothing' });
    const malformed = await app.inject({ method: 'GET', url: '/v1/widgets/%E0%A4%A' });
    const catalog = await app.inject({ method: 'GET', url: '/v1/catalog' });
    expect({
      created: [created.statusCode, created.headers['cache-control']],
      refused: [refused.statusCode, refused.headers['cache-control']],
      unknown: [unknown.statusCode, unknown.headers['cache-control']],
      malformed: [malformed.statusCode, malformed.headers['cache-control']],
      catalog: [catalog.statusCode, catalog.headers['cache-control']],
    }).toEqual({
      created: [201, 'no-store'],
      refused: [400, 'no-store'],
      unknown: [404, 'no-store'],
      malformed: [400, 'no-store'],
      catalog: [200, 'public, max-age=300'],
    });
  });

  it('answers 413 to a body over the limit', async () => {
    const res = await postJson('/v1/widgets', { name: 'x'.repeat(4_000), size: 1 });
    expect(expectErrorBody(res, 413)).toMatch(/too large/i);
  });

  it('answers 404 to an unknown route', async () => {
    const res = await app.inject({ method: 'GET', url: '/v1/nothing-here?x=1' });
    expect(expectErrorBody(res, 404)).toBe('No route GET /v1/nothing-here');
  });

  it('answers 405 with Allow to a known path asked with another method', async () => {
    const res = await app.inject({ method: 'PUT', url: `/v1/widgets/${WIDGET_ID}` });
    expectErrorBody(res, 405);
    expect(res.headers.allow).toBe('GET, DELETE');
    const trailingSlash = await app.inject({ method: 'PATCH', url: '/v1/widgets/' });
    expectErrorBody(trailingSlash, 405);
    expect(trailingSlash.headers.allow).toBe('POST');
  });

  it('answers 401 on an authenticated route without a valid bearer token', async () => {
    expect(expectErrorBody(await app.inject({ method: 'GET', url: `/v1/widgets/${WIDGET_ID}` }), 401)).toMatch(/token/i);
    const forged = await app.inject({ method: 'GET', url: `/v1/widgets/${WIDGET_ID}`, headers: { authorization: 'Bearer abc.def.ghi' } });
    expectErrorBody(forged, 401);
    const basic = await app.inject({ method: 'GET', url: `/v1/widgets/${WIDGET_ID}`, headers: { authorization: 'Basic dTpw' } });
    expectErrorBody(basic, 401);
  });

  it('gives the handler the verified caller', async () => {
    const token = await issuer.sign('user-42');
    const res = await app.inject({ method: 'GET', url: `/v1/widgets/${WIDGET_ID}`, headers: { authorization: `Bearer ${token}` } });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ id: WIDGET_ID, name: 'owned by user-42', size: 1 });
  });

  it('answers an AppError with its status and message', async () => {
    expect(expectErrorBody(await postJson('/v1/failures/conflict', {}), 409)).toBe('Widget name already taken');
  });

  it('answers 500 to a plain Error without its message, and logs the cause', async () => {
    const res = await postJson('/v1/failures/plain', {});
    expect(expectErrorBody(res, 500)).toBe('Internal server error');
    expect(res.body).not.toContain('10.0.0.7');
    const failure = logs.entries().find((e) => e.msg === 'request failed' && e.reqId === res.headers['x-request-id']);
    expect((failure?.err as { message?: string })?.message).toBe(DATABASE_CAUSE);
  });

  it('hides the message of a 5xx AppError', async () => {
    const res = await postJson('/v1/failures/unavailable', {});
    expect(expectErrorBody(res, 503)).toBe('Service unavailable');
  });

  it('strips from every answer what its contract does not name', async () => {
    const token = await issuer.sign('user-1');
    const res = await app.inject({ method: 'GET', url: `/v1/widgets/${WIDGET_ID}`, headers: { authorization: `Bearer ${token}` } });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ id: WIDGET_ID, name: 'owned by user-1', size: 1 });
    expect(res.body).not.toContain('argon2-secret');
  });

  it('answers 500 when a reply breaks its own contract', async () => {
    expect(expectErrorBody(await postJson('/v1/failures/drift', {}), 500)).toBe('Internal server error');
  });
});

describe("the router's own answers", () => {
  it('answers a path parameter over the length limit with 404 {"error"} and a URL that does not decode with 400 {"error"}', async () => {
    const long = await app.inject({ method: 'GET', url: `/v1/widgets/${'x'.repeat(300)}` });
    expect(long.statusCode).toBe(404);
    expect(long.json()).toEqual({ error: expect.stringMatching(/^No route GET \/v1\/widgets\//) });
    const bad = await app.inject({ method: 'GET', url: '/v1/widgets/%E0%A4%A' });
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toEqual({ error: 'Malformed URL' });
  });

  it('gives a URL that does not decode the request id, as every other answer', async () => {
    const given = await app.inject({ method: 'GET', url: '/v1/widgets/%E0%A4%A', headers: { 'x-request-id': 'client-req-7' } });
    const generated = await app.inject({ method: 'GET', url: '/v1/widgets/%E0%A4%A' });
    expect({ given: given.headers['x-request-id'], generated: generated.headers['x-request-id'] }).toEqual({
      given: 'client-req-7',
      generated: expect.stringMatching(/^[0-9a-f-]{36}$/),
    });
  });
});

describe("an app's check before the router's own answers (beforeRouterAnswer)", () => {
  // Stands in for the gateway's rate check: it marks every answer it sees, and refuses once told to.
  let refuse = false;
  const checked = createHttpApp({
    log: logs.log,
    answerHeaders: { 'x-frame-options': 'DENY' },
    beforeRouterAnswer: async (_req, reply) => {
      reply.header('x-checked', 'yes');
      if (refuse) throw new AppError(429, 'Too many requests', { headers: { 'retry-after': '7' } });
    },
  });
  route(checked, widgets.remove, async () => undefined);
  afterAll(() => checked.close());

  it('keeps the headers it sets on a URL that does not decode and on a path parameter over the limit', async () => {
    refuse = false;
    const bad = await checked.inject({ method: 'GET', url: '/v1/widgets/%E0%A4%A' });
    const long = await checked.inject({ method: 'DELETE', url: `/v1/widgets/${'x'.repeat(300)}` });
    expect([bad.statusCode, bad.json(), bad.headers['x-checked']]).toEqual([400, { error: 'Malformed URL' }, 'yes']);
    expect([long.statusCode, long.headers['x-checked']]).toEqual([404, 'yes']);
  });

  it('answers the error it throws instead, in {"error"} with its headers and those of every answer', async () => {
    refuse = true;
    const res = await checked.inject({ method: 'GET', url: '/v1/widgets/%E0%A4%A', headers: { 'x-request-id': 'client-req-8' } });
    expect(expectErrorBody(res, 429)).toBe('Too many requests');
    expect({
      retryAfter: res.headers['retry-after'],
      checked: res.headers['x-checked'],
      id: res.headers['x-request-id'],
      frame: res.headers['x-frame-options'],
      cache: res.headers['cache-control'],
    }).toEqual({ retryAfter: '7', checked: 'yes', id: 'client-req-8', frame: 'DENY', cache: 'no-store' });
  });
});

describe('request ids', () => {
  const get = async (headers: Record<string, string>) => {
    const token = await issuer.sign('user-1');
    return app.inject({ method: 'GET', url: `/v1/widgets/${WIDGET_ID}`, headers: { authorization: `Bearer ${token}`, ...headers } });
  };

  it('accepts a well-formed x-request-id, hands it to the handler and echoes it', async () => {
    const res = await get({ 'x-request-id': 'gw-1234.abc:5' });
    expect(res.headers['x-request-id']).toBe('gw-1234.abc:5');
    expect(seenRequestIds.at(-1)).toBe('gw-1234.abc:5');
    expect(logs.entries().some((e) => e.reqId === 'gw-1234.abc:5')).toBe(true);
  });

  it.each([
    ['too long', 'a'.repeat(129)],
    ['with spaces and quotes', 'abc "def"'],
    ['with a JSON fragment', '{"level":60}'],
  ])('replaces a request id that is %s with a generated one', async (_label, given) => {
    const res = await get({ 'x-request-id': given });
    const id = res.headers['x-request-id'];
    expect(id).not.toBe(given);
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    expect(seenRequestIds.at(-1)).toBe(id);
  });

  it('generates a distinct request id when none is given, also on error answers', async () => {
    const a = await get({});
    const b = await app.inject({ method: 'GET', url: '/v1/unknown' });
    expect(a.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(b.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(a.headers['x-request-id']).not.toBe(b.headers['x-request-id']);
  });

  it('draws no random bytes of its own for each generated id (a syscall a request on the hot path)', async () => {
    const draws = vi.spyOn(globalThis.crypto, 'getRandomValues');
    try {
      const ids = new Set<string>();
      for (let i = 0; i < 32; i++) ids.add(String((await get({})).headers['x-request-id']));
      expect(ids.size).toBe(32);
      expect(draws).not.toHaveBeenCalled();
    } finally {
      draws.mockRestore();
    }
  });
});

describe('secrets in logs', () => {
  it('never writes the Authorization header or a password', async () => {
    const token = await issuer.sign('user-1');
    await postJson('/v1/widgets', { name: 'gear', size: 1, password: SECRET_PASSWORD }, { authorization: `Bearer ${token}` });
    await app.inject({ method: 'GET', url: `/v1/widgets/${WIDGET_ID}`, headers: { authorization: `Bearer ${token}` } });
    await postJson('/v1/failures/plain', { password: SECRET_PASSWORD }, { authorization: `Bearer ${token}` });
    const logged = logs.entries().findLast((e) => e.msg === 'creating widget') as {
      body: { password: string };
      headers: { authorization: string };
    };
    expect(logged.body.password).toBe('[redacted]');
    expect(logged.headers.authorization).toBe('[redacted]');
    expect(logs.text()).not.toContain(SECRET_PASSWORD);
    expect(logs.text()).not.toContain(token);
  });
});

describe('closing', () => {
  it('lets handlersSettled wait for a handler whose client hung up, after close() has returned', async () => {
    const slow = createHttpApp({ log: logs.log });
    let release = () => {};
    let finished = false;
    const started = new Promise<void>((onStart) => {
      route(slow, widgets.create, async (req) => {
        onStart();
        await new Promise<void>((r) => {
          release = r;
        });
        finished = true;
        return { id: 'w2', name: req.body.name, size: req.body.size };
      });
    });
    const url = await slow.listen({ host: '127.0.0.1', port: 0 });
    const client = new AbortController();
    const request = fetch(`${url}/v1/widgets`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'late', size: 1 }),
      signal: client.signal,
    }).catch(() => 'aborted');
    await started;
    client.abort();
    expect(await request).toBe('aborted');
    await slow.close();
    let settled = false;
    const settling = slow.handlersSettled().then(() => {
      settled = true;
    });
    await new Promise((r) => setTimeout(r, 50));
    expect(settled).toBe(false);
    release();
    await settling;
    expect(finished).toBe(true);
  });
});

describe('closing with a connection that never sent a request', () => {
  it('cuts it after the idle drain, so that close() returns then instead of after headersTimeout', async () => {
    const quiet = createHttpApp({ log: logs.log });
    await quiet.listen({ host: '127.0.0.1', port: 0 });
    const { port } = quiet.server.address() as { port: number };
    const socket = connect(port, '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    const socketClosed = new Promise((resolve) => socket.once('close', resolve));
    const outcome = await Promise.race([
      quiet.close().then(() => 'closed'),
      new Promise((resolve) => setTimeout(() => resolve('still open after the drain'), IDLE_DRAIN_MS + 2_000)),
    ]);
    expect(outcome).toBe('closed');
    await socketClosed;
    expect(socket.destroyed).toBe(true);
  });
});

describe('closing with an idle keep-alive connection (a proxy pool)', () => {
  /** One raw keep-alive connection: each request written whole, each answer read up to its body. */
  async function rawConnection(port: number) {
    const socket = connect(port, '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    let received = '';
    let closed = false;
    socket.on('data', (chunk) => {
      received += chunk.toString('latin1');
    });
    socket.on('error', () => {});
    socket.once('close', () => {
      closed = true;
    });
    return {
      async request(path: string): Promise<string> {
        received = '';
        if (!socket.writable) return 'connection closed before the request';
        socket.write(`GET ${path} HTTP/1.1\r\nhost: test\r\nconnection: keep-alive\r\n\r\n`);
        const deadline = Date.now() + 2_000;
        while (!/\r\n\r\n[\s\S]*\}$/.test(received) && !closed && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
        return received || (closed ? 'connection closed without an answer' : 'no answer');
      },
    };
  }

  it('answers a request that arrives on it while stopping 503 with Connection: close, rather than cutting it', async () => {
    const service = createHttpApp({ log: logs.log });
    service.get('/ping', async () => ({ ok: true }));
    await service.listen({ host: '127.0.0.1', port: 0 });
    const { port } = service.server.address() as { port: number };
    const conn = await rawConnection(port);
    expect(await conn.request('/ping')).toMatch(/^HTTP\/1.1 200/);
    // SIGTERM: the server stops listening; the pool still holds the connection and writes on it.
    const closing = service.close();
    await vi.waitFor(() => expect(service.server.listening).toBe(false), { timeout: 2_000, interval: 5 });
    const answer = await conn.request('/ping');
    expect(answer.split('\r\n')[0]).toBe('HTTP/1.1 503 Service Unavailable');
    expect(answer.toLowerCase()).toContain('connection: close');
    await closing;
  });
});
