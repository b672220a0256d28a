import {
  authRoutes,
  gatewayRoutes,
  mediaRoutes,
  messagesRoutes,
  musicRoutes,
  type RouteContract,
  readStatesRoutes,
  searchRoutes,
  serversRoutes,
  socialRoutes,
  voiceRoutes,
} from '@chat/contracts';
import type { z } from 'zod';
import { ApiError } from './error.ts';
import { ChatSocket, type SocketOptions } from './socket.ts';

/** The route groups of the contracts; each becomes a group of methods on the client (`client.servers.create`). */
const AREAS = {
  gateway: gatewayRoutes,
  auth: authRoutes,
  servers: serversRoutes,
  messages: messagesRoutes,
  voice: voiceRoutes,
  social: socialRoutes,
  media: mediaRoutes,
  music: musicRoutes,
  search: searchRoutes,
  readStates: readStatesRoutes,
};
type Areas = typeof AREAS;

type Wire<S> = S extends z.ZodType ? z.input<S> : never;

/** What a call of route C takes: its path parameters, query and body as the contract declares them. */
export type CallInput<C extends RouteContract> = (C['params'] extends z.ZodType ? { params: Wire<C['params']> } : unknown) &
  (C['query'] extends z.ZodType ? { query?: Wire<C['query']> } : unknown) &
  (C['body'] extends z.ZodType ? { body: Wire<C['body']> } : unknown) &
  (C['multipart'] extends true ? { body: FormData } : unknown) &
  CallOptions;

export interface CallOptions {
  /** Sent as Idempotency-Key; a creating POST gets a fresh one per call when none is given. */
  idempotencyKey?: string;
  signal?: AbortSignal;
}

/** The answer of another success status a contract declares (a 202 pending registration, a 201 new conversation). */
type AlternativeAt<A, S extends number> = A extends { [P in S]: { response: infer R } }
  ? R extends z.ZodType
    ? z.input<R>
    : undefined
  : never;
type Alternatives<C extends RouteContract> = undefined extends C['alternatives']
  ? never
  : AlternativeAt<C['alternatives'], 200> | AlternativeAt<C['alternatives'], 201> | AlternativeAt<C['alternatives'], 202>;

/** What a call of route C answers: the contract's response (or one of its alternative outcomes); undefined for 204. */
export type CallOutput<C extends RouteContract> = (C['response'] extends z.ZodType ? z.input<C['response']> : undefined) | Alternatives<C>;

type Call<C extends RouteContract> =
  Partial<CallInput<C>> extends CallInput<C>
    ? (input?: CallInput<C>) => Promise<CallOutput<C>>
    : (input: CallInput<C>) => Promise<CallOutput<C>>;

/** Every route of the contracts as a typed method, grouped by area. */
export type RouteMethods = { [A in keyof Areas]: { [K in keyof Areas[A]]: Areas[A][K] extends RouteContract ? Call<Areas[A][K]> : never } };

export interface TokenPair {
  token: string;
  refreshToken: string;
}

export interface ClientOptions {
  /** The gateway's origin, e.g. `https://chat.example`. */
  baseUrl: string;
  /** A token pair to start with (from an earlier login). */
  tokens?: TokenPair;
  /** Told of every new token pair (login, refresh) and of `undefined` when the session ended; store them here. */
  onTokens?: (tokens: TokenPair | undefined) => void;
  /** Retries after a 429, 502, 503 or 504 (default 5). */
  maxRetries?: number;
  /** The first wait before retrying a 502/503/504, doubled after each (default 250 ms). */
  retryDelayMs?: number;
  /**
   * The longest wait for a 429 that the client sits out by itself (default 60 s): a longer one (a
   * slowmode of hours, a login locked for 15 minutes) is thrown at once, for the app to show.
   */
  maxRetryWaitMs?: number;
  /** Extra headers on every request. */
  headers?: Record<string, string>;
  /** The fetch to use (default: the global one). */
  fetch?: typeof fetch;
  /** How to wait before a retry (default: a timer); tests pass one that records the waits. */
  sleep?: (ms: number) => Promise<void>;
  /**
   * Told of every answer a call ends with (after its retries), before it is returned or thrown:
   * the status and headers (X-RateLimit-Remaining...) that the typed result does not carry.
   */
  onResponse?: (answer: { route: string; status: number; headers: Headers }) => void;
  /** Settings of the real-time socket (`client.socket`): reconnect delays, the WebSocket to use. */
  socket?: Partial<Pick<SocketOptions, 'createWebSocket' | 'reconnectDelayMs' | 'maxReconnectDelayMs' | 'random'>>;
}

const TOKEN_ROUTES = new Set<RouteContract>([authRoutes.register, authRoutes.login, authRoutes.verifyEmail]);

/**
 * A client of the whole API, its types taken from the contracts. It keeps the token pair in memory,
 * refreshes it on a 401 (one refresh in flight however many calls failed), waits out a 429 (its
 * Retry-After, then twice as long on each further 429), sends an Idempotency-Key with every
 * creating POST so that 502, 503 and 504 are retried safely, and throws ApiError for every failure.
 */
export type ChatClient = RouteMethods & {
  /** The current token pair, if signed in. */
  readonly tokens: TokenPair | undefined;
  setTokens(tokens: TokenPair | undefined): void;
  /** Calls one route contract directly. */
  call<C extends RouteContract>(contract: C, input?: CallInput<C>): Promise<CallOutput<C>>;
  /**
   * The real-time socket, opened by `socket.connect()` with this client's token (refreshed like
   * any call's when the gateway refuses it) at the address `GET /v1/gateway` answers.
   */
  readonly socket: ChatSocket;
};

export function createClient(options: ClientOptions): ChatClient {
  const fetchImpl = options.fetch ?? fetch;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const maxRetries = options.maxRetries ?? 5;
  const retryDelayMs = options.retryDelayMs ?? 250;
  const maxRetryWaitMs = options.maxRetryWaitMs ?? 60_000;
  let tokens = options.tokens;
  let refreshing: Promise<boolean> | undefined;

  function setTokens(next: TokenPair | undefined) {
    tokens = next;
    options.onTokens?.(next);
  }

  /** One refresh for every call that failed with the same stale token; true when a new pair came. */
  function refresh(stale: string): Promise<boolean> {
    if (tokens && tokens.token !== stale) return Promise.resolve(true);
    if (!tokens) return Promise.resolve(false);
    refreshing ??= (async () => {
      const presented = tokens?.refreshToken;
      try {
        const res = await send(authRoutes.refresh, { body: { refreshToken: presented } }, undefined);
        if (res.status !== 200) {
          setTokens(undefined);
          return false;
        }
        const pair = (await res.json()) as TokenPair;
        setTokens({ token: pair.token, refreshToken: pair.refreshToken });
        return true;
      } finally {
        refreshing = undefined;
      }
    })();
    return refreshing;
  }

  async function send(contract: RouteContract, input: Record<string, unknown>, idempotencyKey: string | undefined) {
    const url = new URL(pathOf(contract, input.params as Record<string, unknown> | undefined), options.baseUrl);
    for (const [key, value] of Object.entries((input.query as Record<string, unknown>) ?? {})) {
      if (value !== undefined && value !== null) url.searchParams.set(key, String(value));
    }
    const headers: Record<string, string> = { ...options.headers };
    if (contract.auth && tokens) headers.authorization = `Bearer ${tokens.token}`;
    if (idempotencyKey) headers['idempotency-key'] = idempotencyKey;
    let body: FormData | string | undefined;
    if (input.body instanceof FormData) body = input.body;
    else if (input.body !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(input.body);
    }
    try {
      return await fetchImpl(url, { method: contract.method, headers, body, signal: input.signal as AbortSignal | undefined });
    } catch (err) {
      throw new ApiError(0, `Could not reach ${url.origin}: ${(err as Error).message}`, routeName(contract), undefined, { cause: err });
    }
  }

  async function call<C extends RouteContract>(contract: C, input: CallInput<C> = {} as CallInput<C>): Promise<CallOutput<C>> {
    const given = input as Record<string, unknown> & CallOptions;
    const creating = contract.method === 'POST' && contract.status === 201;
    const idempotencyKey = given.idempotencyKey ?? (creating ? crypto.randomUUID() : undefined);
    // 503 means nothing was done; 502 and 504 leave the outcome unknown, so only a request that is
    // idempotent (by method, or by its Idempotency-Key) is sent again after them.
    const retriesUnknownOutcome = contract.method !== 'POST' || idempotencyKey !== undefined;
    let limitedWaitMs: number | undefined;
    let unavailableWaitMs = retryDelayMs;
    let refreshed = false;
    for (let attempt = 0; ; attempt++) {
      const usedToken = tokens?.token;
      const res = await send(contract, given, idempotencyKey);
      if (res.status === 401 && contract.auth && usedToken && !refreshed) {
        refreshed = true;
        if (await refresh(usedToken)) {
          await res.body?.cancel();
          attempt--;
          continue;
        }
      }
      if (attempt < maxRetries && res.status === 429) {
        const retryAfterMs = Number(res.headers.get('retry-after')) * 1000;
        const waitMs =
          limitedWaitMs === undefined ? (Number.isFinite(retryAfterMs) && retryAfterMs > 0 ? retryAfterMs : 1000) : limitedWaitMs * 2;
        if (waitMs <= maxRetryWaitMs) {
          await res.body?.cancel();
          limitedWaitMs = waitMs;
          await sleep(waitMs);
          continue;
        }
      }
      if (attempt < maxRetries && (res.status === 503 || (retriesUnknownOutcome && (res.status === 502 || res.status === 504)))) {
        await res.body?.cancel();
        await sleep(unavailableWaitMs);
        unavailableWaitMs *= 2;
        continue;
      }
      return answer(contract, res);
    }
  }

  async function answer<C extends RouteContract>(contract: C, res: Response): Promise<CallOutput<C>> {
    options.onResponse?.({ route: routeName(contract), status: res.status, headers: res.headers });
    const text = await res.text();
    let body: unknown;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      body = text;
    }
    if (!res.ok) {
      const message = typeof (body as { error?: unknown })?.error === 'string' ? (body as { error: string }).error : `HTTP ${res.status}`;
      throw new ApiError(res.status, message, routeName(contract), body);
    }
    if (TOKEN_ROUTES.has(contract) && isTokenPair(body)) setTokens({ token: body.token, refreshToken: body.refreshToken });
    if ((contract as RouteContract) === authRoutes.logout) setTokens(undefined);
    return body as CallOutput<C>;
  }

  let socket: ChatSocket | undefined;
  const client = {
    get tokens() {
      return tokens;
    },
    setTokens,
    call,
  } as ChatClient;
  // Not enumerable: the client's enumerable members are its route areas; made on first use.
  Object.defineProperty(client, 'socket', {
    enumerable: false,
    get() {
      socket ??= new ChatSocket({
        ...options.socket,
        url: async () => (await call(gatewayRoutes.gateway)).url,
        token: () => tokens?.token,
        refresh,
        headers: options.headers,
      });
      return socket;
    },
  });
  for (const [area, routes] of Object.entries(AREAS)) {
    const methods = Object.fromEntries(
      Object.entries(routes as Record<string, RouteContract>).map(([name, contract]) => [
        name,
        (input?: CallInput<RouteContract>) => call(contract, input),
      ]),
    );
    Object.assign(client, { [area]: methods });
  }
  return client;
}

function pathOf(contract: RouteContract, params: Record<string, unknown> = {}): string {
  return contract.path.replace(/:(\w+)/g, (_, name: string) => {
    const value = params[name];
    if (value === undefined || value === null) throw new ApiError(0, `Missing path parameter ${name}`, routeName(contract));
    return encodeURIComponent(String(value));
  });
}

function routeName(contract: RouteContract): string {
  return `${contract.method} ${contract.path}`;
}

function isTokenPair(body: unknown): body is TokenPair {
  return typeof (body as TokenPair)?.token === 'string' && typeof (body as TokenPair)?.refreshToken === 'string';
}
