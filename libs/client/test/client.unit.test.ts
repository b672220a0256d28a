import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ALL_ROUTES } from '@chat/contracts';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ApiError, type ChatClient, createClient, type TokenPair } from '../src/index.ts';

// The client against a real HTTP server whose answers each test scripts: the gateway cannot be made
// to answer 502 or a given Retry-After on demand. Waits go through an injected sleep that records
// them, so no test waits for real time. test/e2e/client.test.ts runs it against the real platform.

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

let server: Server;
let baseUrl: string;
let seen: Seen[];
let answer: (req: Seen, res: ServerResponse) => void;
let waits: number[];

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => {
      body += chunk;
    });
    req.on('end', () => {
      const request = { method: req.method!, url: req.url!, headers: req.headers, body };
      seen.push(request);
      answer(request, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise((resolve) => server.close(resolve)));
beforeEach(() => {
  seen = [];
  waits = [];
});

const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) =>
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(body === undefined ? undefined : JSON.stringify(body));

function client(tokens?: TokenPair, told: (TokenPair | undefined)[] = []): ChatClient {
  return createClient({
    baseUrl,
    tokens,
    onTokens: (pair) => told.push(pair),
    sleep: async (ms) => {
      waits.push(ms);
    },
  });
}

const SERVER_ID = '0190f3c1-7a6e-7c1e-9a8b-1234567890ab';
const server1 = { id: SERVER_ID, name: 'One' };

describe('the typed client', () => {
  it('has a method for every route of the contracts', () => {
    const c = client();
    const methods = Object.values(c).filter((area) => typeof area === 'object' && area !== null);
    const count = methods.reduce((sum, area) => sum + Object.values(area as object).filter((m) => typeof m === 'function').length, 0);
    expect(count).toBe(ALL_ROUTES.length);
  });

  it('types each method from its contract (checked by npm run typecheck)', () => {
    const c = client();
    // Never called: what tsc accepts and refuses here is the check.
    const typed = async (): Promise<string> => {
      // @ts-expect-error a server needs a name
      await c.servers.createServer({ body: {} });
      // @ts-expect-error the messages of a channel need its id
      await c.messages.listMessages({ query: { limit: 5 } });
      const server = await c.servers.createServer({ body: { name: 'x' } });
      return server.ownerId;
    };
    expect(typed).toBeInstanceOf(Function);
  });

  it('fills path parameters and the query, sends the token and the JSON body, and answers the body', async () => {
    answer = (_req, res) => json(res, 200, [{ id: 'm1' }]);
    const c = client({ token: 'access-1', refreshToken: 'refresh-1' });
    const page = await c.messages.listMessages({ params: { channelId: 'a b/c' }, query: { limit: 5, before: undefined } });
    expect(page).toEqual([{ id: 'm1' }]);
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ method: 'GET', url: '/v1/channels/a%20b%2Fc/messages?limit=5' });
    expect(seen[0]?.headers.authorization).toBe('Bearer access-1');
    expect(seen[0]?.headers['idempotency-key']).toBeUndefined();
  });

  it('tells onResponse the status and headers of the answer each call ends with, after its retries', async () => {
    let calls = 0;
    answer = (_req, res) => {
      calls++;
      if (calls === 1) return json(res, 503, { error: 'Service unavailable' });
      json(res, 201, { id: SERVER_ID, name: 'One' }, { 'x-ratelimit-remaining': '298' });
    };
    const told: { route: string; status: number; remaining: string | null }[] = [];
    const c = createClient({
      baseUrl,
      sleep: async () => {},
      onResponse: ({ route, status, headers }) => told.push({ route, status, remaining: headers.get('x-ratelimit-remaining') }),
    });
    await c.servers.createServer({ body: { name: 'One' } });
    expect(told).toEqual([{ route: 'POST /v1/servers', status: 201, remaining: '298' }]);
  });

  it('throws one ApiError class with the status and the server message', async () => {
    answer = (_req, res) => json(res, 403, { error: 'Missing permission' });
    const error = await client({ token: 't', refreshToken: 'r' })
      .servers.getServer({ params: { serverId: SERVER_ID } })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect(error).toMatchObject({ status: 403, message: 'Missing permission', route: 'GET /v1/servers/:serverId' });

    // A GET that gets no answer is retried like one answered 502, then thrown with status 0.
    const unreachable = await createClient({ baseUrl: 'http://127.0.0.1:9', sleep: async (ms) => void waits.push(ms) })
      .gateway.health()
      .catch((e: unknown) => e);
    expect(unreachable).toBeInstanceOf(ApiError);
    expect((unreachable as ApiError).status).toBe(0);
    expect(waits).toEqual([250, 500, 1000, 2000, 4000]);
  });

  it('refreshes once for many calls that fail with the same expired token, then repeats each', async () => {
    let refreshes = 0;
    answer = (req, res) => {
      if (req.url === '/v1/auth/refresh') {
        refreshes++;
        expect(JSON.parse(req.body)).toEqual({ refreshToken: 'refresh-1' });
        // Answered late, so that every failing call is waiting for this one refresh.
        setTimeout(() => json(res, 200, { token: 'access-2', refreshToken: 'refresh-2' }), 50);
        return;
      }
      if (req.headers.authorization !== 'Bearer access-2') return json(res, 401, { error: 'Token expired' });
      json(res, 200, server1);
    };
    const told: (TokenPair | undefined)[] = [];
    const c = client({ token: 'access-1', refreshToken: 'refresh-1' }, told);
    const results = await Promise.all(Array.from({ length: 5 }, () => c.servers.getServer({ params: { serverId: SERVER_ID } })));
    expect(results).toEqual(Array(5).fill(server1));
    expect(refreshes).toBe(1);
    expect(c.tokens).toEqual({ token: 'access-2', refreshToken: 'refresh-2' });
    expect(told).toEqual([{ token: 'access-2', refreshToken: 'refresh-2' }]);
    expect(seen.filter((r) => r.url.startsWith('/v1/servers/'))).toHaveLength(10);
  });

  it('ends the session when the refresh token is refused (401) or malformed (400), and throws the 401', async () => {
    for (const refusal of [401, 400]) {
      seen = [];
      answer = (req, res) =>
        req.url === '/v1/auth/refresh'
          ? json(res, refusal, { error: 'Refresh token revoked' })
          : json(res, 401, { error: 'Token expired' });
      const told: (TokenPair | undefined)[] = [];
      const c = client({ token: 'access-1', refreshToken: 'refresh-1' }, told);
      await expect(c.servers.listMyServers()).rejects.toMatchObject({ status: 401, message: 'Token expired' });
      expect(c.tokens).toBeUndefined();
      expect(told).toEqual([undefined]);
      expect(seen.map((r) => r.url)).toEqual(['/v1/servers', '/v1/auth/refresh']);
    }
  });

  it('retries a refresh answered 503 or 429 like any call, and keeps the pair when it stays unavailable', async () => {
    const refreshAnswers = [503, 429];
    answer = (req, res) => {
      if (req.url !== '/v1/auth/refresh') {
        return req.headers.authorization === 'Bearer access-2' ? json(res, 200, [server1]) : json(res, 401, { error: 'Token expired' });
      }
      const status = refreshAnswers.shift();
      if (status) return json(res, status, { error: 'Busy' }, { 'retry-after': '3' });
      json(res, 200, { token: 'access-2', refreshToken: 'refresh-2' });
    };
    const told: (TokenPair | undefined)[] = [];
    const c = client({ token: 'access-1', refreshToken: 'refresh-1' }, told);
    expect(await c.servers.listMyServers()).toEqual([server1]);
    expect(waits).toEqual([250, 3000]);
    expect(told).toEqual([{ token: 'access-2', refreshToken: 'refresh-2' }]);

    // Down for longer than the retries: the call fails with the refresh's 503; the session lives on.
    seen = [];
    waits = [];
    answer = (req, res) =>
      req.url === '/v1/auth/refresh' ? json(res, 503, { error: 'Service unavailable' }) : json(res, 401, { error: 'Token expired' });
    const later = client({ token: 'access-1', refreshToken: 'refresh-1' }, told.splice(0));
    await expect(later.servers.listMyServers()).rejects.toMatchObject({ status: 503, route: 'POST /v1/auth/refresh' });
    expect(later.tokens).toEqual({ token: 'access-1', refreshToken: 'refresh-1' });
    expect(told).toEqual([]);
    expect(seen.filter((r) => r.url === '/v1/auth/refresh')).toHaveLength(6);
  });

  it('keeps the pair when a refresh gets a 502 or no answer, without repeating it (it may have rotated the pair)', async () => {
    for (const fault of ['502', 'reset'] as const) {
      seen = [];
      answer = (req, res) => {
        if (req.url !== '/v1/auth/refresh') return json(res, 401, { error: 'Token expired' });
        if (fault === '502') return json(res, 502, { error: 'Bad gateway' });
        res.destroy();
      };
      const told: (TokenPair | undefined)[] = [];
      const c = client({ token: 'access-1', refreshToken: 'refresh-1' }, told);
      await expect(c.servers.listMyServers()).rejects.toMatchObject({ status: fault === '502' ? 502 : 0 });
      expect(c.tokens).toEqual({ token: 'access-1', refreshToken: 'refresh-1' });
      expect(told).toEqual([]);
      expect(seen.map((r) => r.url)).toEqual(['/v1/servers', '/v1/auth/refresh']);
    }
  });

  it('keeps the pair of an explicit auth.refresh, so that the next refresh presents its refresh token', async () => {
    let pairs = 1;
    answer = (req, res) => {
      if (req.url === '/v1/auth/refresh') {
        pairs++;
        return json(res, 200, { token: `access-${pairs}`, refreshToken: `refresh-${pairs}` });
      }
      // Every access token has expired by now.
      json(res, 401, { error: 'Token expired' });
    };
    const told: (TokenPair | undefined)[] = [];
    const c = client({ token: 'access-1', refreshToken: 'refresh-1' }, told);
    await c.auth.refresh({ body: { refreshToken: 'refresh-1' } });
    expect(c.tokens).toEqual({ token: 'access-2', refreshToken: 'refresh-2' });
    await expect(c.servers.listMyServers()).rejects.toMatchObject({ status: 401 });
    expect(seen.filter((r) => r.url === '/v1/auth/refresh').map((r) => JSON.parse(r.body))).toEqual([
      { refreshToken: 'refresh-1' },
      { refreshToken: 'refresh-2' },
    ]);
    expect(told).toEqual([
      { token: 'access-2', refreshToken: 'refresh-2' },
      { token: 'access-3', refreshToken: 'refresh-3' },
    ]);
  });

  it("waits out a 429's Retry-After, then twice as long on each further 429", async () => {
    let calls = 0;
    answer = (_req, res) =>
      ++calls <= 3 ? json(res, 429, { error: 'Too many requests' }, { 'retry-after': '2' }) : json(res, 200, [server1]);
    expect(await client({ token: 't', refreshToken: 'r' }).servers.listMyServers()).toEqual([server1]);
    expect(waits).toEqual([2000, 4000, 8000]);
    expect(seen).toHaveLength(4);
  });

  it('throws a 429 whose wait is longer than maxRetryWaitMs at once, and stops doubling past it', async () => {
    answer = (_req, res) => json(res, 429, { error: 'Too many failed logins for this account; try again later' }, { 'retry-after': '900' });
    await expect(client({ token: 't', refreshToken: 'r' }).auth.login({ body: { login: 'a', password: 'b' } })).rejects.toMatchObject({
      status: 429,
      message: 'Too many failed logins for this account; try again later',
    });
    expect(waits).toEqual([]);
    expect(seen).toHaveLength(1);

    answer = (_req, res) => json(res, 429, { error: 'Too many requests' }, { 'retry-after': '20' });
    const c = createClient({ baseUrl, maxRetryWaitMs: 50_000, sleep: async (ms) => void waits.push(ms) });
    await expect(c.servers.listMyServers()).rejects.toMatchObject({ status: 429 });
    expect(waits).toEqual([20_000, 40_000]);
    expect(seen).toHaveLength(4);
  });

  it('gives up after its retries with the last answer as the error', async () => {
    answer = (_req, res) => json(res, 429, { error: 'Too many requests' }, { 'retry-after': '1' });
    const c = createClient({ baseUrl, maxRetries: 2, sleep: async (ms) => void waits.push(ms) });
    await expect(c.auth.login({ body: { login: 'a', password: 'b' } })).rejects.toMatchObject({ status: 429 });
    expect(waits).toEqual([1000, 2000]);
    expect(seen).toHaveLength(3);
  });

  it('sends one Idempotency-Key with a creating POST and retries it after 502, 503 and 504', async () => {
    const statuses = [502, 503, 504];
    answer = (_req, res) => {
      const status = statuses.shift();
      if (status) return json(res, status, { error: 'upstream' });
      json(res, 201, server1);
    };
    expect(await client({ token: 't', refreshToken: 'r' }).servers.createServer({ body: { name: 'One' } })).toEqual(server1);
    const keys = seen.map((r) => r.headers['idempotency-key']);
    expect(keys).toHaveLength(4);
    expect(keys[0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(new Set(keys).size).toBe(1);
    expect(waits).toEqual([250, 500, 1000]);
    expect(JSON.parse(seen[0]!.body)).toEqual({ name: 'One' });
  });

  it('gives every creating call a key of its own, and repeats an action after 503 but not after 502', async () => {
    answer = (_req, res) => json(res, 201, server1);
    const c = client({ token: 't', refreshToken: 'r' });
    await c.servers.createServer({ body: { name: 'One' } });
    await c.servers.createServer({ body: { name: 'One' } });
    expect(seen[0]?.headers['idempotency-key']).not.toBe(seen[1]?.headers['idempotency-key']);

    seen = [];
    const statuses = [503, 502];
    answer = (_req, res) => json(res, statuses.shift() ?? 200, { error: 'upstream' });
    // Joining answers 200: an action, not a creation, so a 502 (outcome unknown) is not repeated.
    await expect(c.servers.joinServer({ params: { serverId: SERVER_ID } })).rejects.toMatchObject({ status: 502 });
    expect(seen).toHaveLength(2);
    expect(seen[0]?.headers['idempotency-key']).toBeUndefined();
  });

  it('gives a POST that creates only sometimes (201 as an alternative) a key, and retries it after 502', async () => {
    const conversation = { id: SERVER_ID, kind: 'group' };
    const statuses = [502];
    answer = (_req, res) => json(res, statuses.shift() ?? 201, conversation);
    const created = await client({ token: 't', refreshToken: 'r' }).social.createConversation({
      body: { userIds: [SERVER_ID, '0190f3c1-7a6e-7c1e-9a8b-1234567890ac'] },
    });
    expect(created).toEqual(conversation);
    const keys = seen.map((r) => r.headers['idempotency-key']);
    expect(keys).toHaveLength(2);
    expect(keys[0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(keys[1]).toBe(keys[0]);
  });

  it('waits while the first attempt of a keyed call is still running (409), then answers its stored result', async () => {
    const stillRunning = { error: 'A request with this Idempotency-Key is still being processed; retry later' };
    const statuses = [504, 409, 409];
    answer = (_req, res) => {
      const status = statuses.shift();
      if (status) return json(res, status, status === 409 ? stillRunning : { error: 'Gateway timeout' });
      json(res, 201, server1, { 'idempotent-replayed': 'true' });
    };
    const c = client({ token: 't', refreshToken: 'r' });
    expect(await c.servers.createServer({ body: { name: 'One' } })).toEqual(server1);
    expect(new Set(seen.map((r) => r.headers['idempotency-key'])).size).toBe(1);
    expect(seen).toHaveLength(4);
    expect(waits).toEqual([250, 500, 1000]);

    // Bounded: a first attempt that never ends is thrown after the retries.
    seen = [];
    answer = (_req, res) => json(res, 409, stillRunning);
    await expect(c.servers.createServer({ body: { name: 'One' } })).rejects.toMatchObject({ status: 409, message: stillRunning.error });
    expect(seen).toHaveLength(6);

    // A route's own conflict is the app's to handle, at once.
    seen = [];
    answer = (_req, res) => json(res, 409, { error: 'That username is taken' });
    await expect(c.auth.register({ body: { username: 'ada', email: 'ada@example.test', password: 'secret-pass' } })).rejects.toMatchObject({
      status: 409,
      message: 'That username is taken',
    });
    expect(seen).toHaveLength(1);
  });

  it('retries a keyed POST whose connection was reset after the request with the same key, but not an action POST', async () => {
    let posts = 0;
    answer = (_req, res) => (++posts === 1 ? res.destroy() : json(res, 201, server1));
    const c = client({ token: 't', refreshToken: 'r' });
    expect(await c.servers.createServer({ body: { name: 'One' } })).toEqual(server1);
    expect(seen).toHaveLength(2);
    expect(seen[1]?.headers['idempotency-key']).toBe(seen[0]?.headers['idempotency-key']);
    expect(waits).toEqual([250]);

    // Joining has no key: sent again, it could be done twice.
    seen = [];
    waits = [];
    answer = (_req, res) => res.destroy();
    await expect(c.servers.joinServer({ params: { serverId: SERVER_ID } })).rejects.toMatchObject({ status: 0 });
    expect(seen).toHaveLength(1);
    expect(waits).toEqual([]);
  });

  it('tells the app how long to wait (retryAfter, in seconds) with a 429 or 503 it throws', async () => {
    answer = (_req, res) => json(res, 429, { error: 'Too many failed logins for this account; try again later' }, { 'retry-after': '900' });
    const c = createClient({ baseUrl, maxRetries: 0 });
    await expect(c.auth.login({ body: { login: 'a', password: 'b' } })).rejects.toMatchObject({ status: 429, retryAfter: 900 });

    answer = (_req, res) =>
      json(res, 503, { error: 'Service unavailable' }, { 'retry-after': new Date(Date.now() + 30_000).toUTCString() });
    const unavailable = (await c.servers.listMyServers().catch((e: unknown) => e)) as ApiError;
    expect(unavailable.status).toBe(503);
    expect(unavailable.retryAfter).toBeGreaterThanOrEqual(29);
    expect(unavailable.retryAfter).toBeLessThanOrEqual(30);

    answer = (_req, res) => json(res, 403, { error: 'Missing permission' });
    await expect(c.servers.listMyServers()).rejects.toMatchObject({ status: 403, retryAfter: undefined });
  });

  it('hands over the bytes of a file route unchanged, and its failure as an ApiError', async () => {
    // Not UTF-8: a text decoding would replace these bytes.
    const file = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0xff, 0xfe, 0x80, 0x0a, 0xc3]);
    answer = (_req, res) => res.writeHead(200, { 'content-type': 'image/png' }).end(file);
    const c = client();
    const bytes: Uint8Array = await c.media.serve({ params: { id: SERVER_ID, filename: 'dot.png' } });
    expect(bytes).toBeInstanceOf(Uint8Array);
    expect(Buffer.from(bytes).equals(file)).toBe(true);

    answer = (_req, res) => json(res, 404, { error: 'No such file' });
    await expect(c.media.serve({ params: { id: SERVER_ID, filename: 'dot.png' } })).rejects.toMatchObject({
      status: 404,
      message: 'No such file',
    });
  });

  it('keeps the token pair of a login and forgets it on logout', async () => {
    answer = (req, res) =>
      req.url === '/v1/auth/login' ? json(res, 200, { token: 'a', refreshToken: 'r', user: { id: 'u' } }) : res.writeHead(204).end();
    const told: (TokenPair | undefined)[] = [];
    const c = client(undefined, told);
    await c.auth.login({ body: { login: 'someone', password: 'secret-pass' } });
    expect(c.tokens).toEqual({ token: 'a', refreshToken: 'r' });
    expect(await c.auth.logout({ body: { refreshToken: 'r' } })).toBeUndefined();
    expect(c.tokens).toBeUndefined();
    expect(told).toEqual([{ token: 'a', refreshToken: 'r' }, undefined]);
  });
});
