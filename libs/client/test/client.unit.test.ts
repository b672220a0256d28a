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

    const unreachable = await createClient({ baseUrl: 'http://127.0.0.1:9' })
      .gateway.health()
      .catch((e: unknown) => e);
    expect(unreachable).toBeInstanceOf(ApiError);
    expect((unreachable as ApiError).status).toBe(0);
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

  it('ends the session when the refresh token is refused, and throws the 401', async () => {
    answer = (req, res) =>
      req.url === '/v1/auth/refresh' ? json(res, 401, { error: 'Refresh token revoked' }) : json(res, 401, { error: 'Token expired' });
    const told: (TokenPair | undefined)[] = [];
    const c = client({ token: 'access-1', refreshToken: 'refresh-1' }, told);
    await expect(c.servers.listMyServers()).rejects.toMatchObject({ status: 401, message: 'Token expired' });
    expect(c.tokens).toBeUndefined();
    expect(told).toEqual([undefined]);
    expect(seen.map((r) => r.url)).toEqual(['/v1/servers', '/v1/auth/refresh']);
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
