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
  /** Sent as Idempotency-Key; a POST that can create gets a fresh one per call when none is given. */
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

/**
 * What a call of route C answers: the contract's response (or one of its alternative outcomes);
 * undefined for 204; the bytes for a route that serves a file (see answersBytes).
 */
export type CallOutput<C extends RouteContract> =
  | (C['response'] extends z.ZodCustom ? Uint8Array : C['response'] extends z.ZodType ? z.input<C['response']> : undefined)
  | Alternatives<C>;

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
  /**
   * Retries of one call (default 5): after a 429 or 503; after a 502, a 504 or no answer when the
   * call is idempotent (not a POST, or one with an Idempotency-Key); after the 409 of a keyed call
   * whose first attempt is still running.
   */
  maxRetries?: number;
  /** The first wait before retrying anything but a 429, doubled after each (default 250 ms). */
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

/** The routes that answer a new token pair: it replaces the client's. */
const TOKEN_ROUTES = new Set<RouteContract>([authRoutes.register, authRoutes.login, authRoutes.verifyEmail, authRoutes.refresh]);
/** What the refresh route answers a refresh token that is dead (401) or not a token at all (400): the session is over. */
const REFRESH_REFUSED = new Set([400, 401]);
/**
 * The 409 of a keyed request whose first attempt is still running (libs/kit idempotency.ts). It has
 * no code of its own, so its message tells it apart from a route's own conflict (a taken name).
 */
const KEY_STILL_PROCESSING = /Idempotency-Key is still being processed/;

/**
 * A client of the whole API, its types taken from the contracts. It keeps the token pair in memory,
 * refreshes it on a 401 (one refresh in flight however many calls failed), waits out a 429 (its
 * Retry-After, then twice as long on each further 429), sends an Idempotency-Key with every POST
 * that can create so that 502, 504 and a lost answer are retried safely, and throws ApiError for
 * every failure.
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

  /**
   * One refresh for every call that failed with the same stale token: true when a new pair came,
   * false when the refresh token was refused (the session is over). A failure that says nothing of
   * the refresh token (503 or 429 past their retries, 502, 504, no answer) keeps the pair and is
   * thrown, so that only the call that needed the refresh fails.
   */
  function refresh(stale: string): Promise<boolean> {
    const current = tokens;
    if (!current) return Promise.resolve(false);
    if (current.token !== stale) return Promise.resolve(true);
    refreshing ??= (async () => {
      try {
        // A token route: answer() keeps the new pair.
        await call(authRoutes.refresh, { body: { refreshToken: current.refreshToken } });
        return true;
      } catch (err) {
        if (!(err instanceof ApiError && REFRESH_REFUSED.has(err.status))) throw err;
        if (tokens?.refreshToken === current.refreshToken) setTokens(undefined);
        return false;
      } finally {
        refreshing = undefined;
      }
    })();
    return refreshing;
  }

  /** One attempt; a request that got no answer throws ApiError with status 0. */
  async function send(contract: RouteContract, url: URL, input: Record<string, unknown>, idempotencyKey: string | undefined) {
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
    const url = urlOf(contract, given, options.baseUrl);
    const idempotencyKey = given.idempotencyKey ?? (mayCreate(contract) ? crypto.randomUUID() : undefined);
    // 503 means nothing was done; 502, 504 and a lost answer leave the outcome unknown, so only a
    // request that is idempotent (by method, or by its Idempotency-Key) is sent again after them.
    const retriesUnknownOutcome = contract.method !== 'POST' || idempotencyKey !== undefined;
    let limitedWaitMs: number | undefined;
    let unavailableWaitMs = retryDelayMs;
    const backOff = async () => {
      await sleep(unavailableWaitMs);
      unavailableWaitMs *= 2;
    };
    let refreshed = false;
    for (let attempt = 0; ; attempt++) {
      const usedToken = tokens?.token;
      const res = await send(contract, url, given, idempotencyKey).catch((err: ApiError) => err);
      const mayRetry = attempt < maxRetries && !given.signal?.aborted;
      if (res instanceof ApiError) {
        if (!(mayRetry && retriesUnknownOutcome)) throw res;
        await backOff();
        continue;
      }
      if (res.status === 401 && contract.auth && usedToken && !refreshed) {
        refreshed = true;
        const renewed = await refresh(usedToken).catch(async (err: unknown) => {
          await res.body?.cancel();
          throw err;
        });
        if (renewed) {
          await res.body?.cancel();
          attempt--;
          continue;
        }
      }
      if (mayRetry && res.status === 429) {
        const toldSeconds = retryAfterOf(res.headers);
        const waitMs = limitedWaitMs === undefined ? (toldSeconds ? toldSeconds * 1000 : 1000) : limitedWaitMs * 2;
        if (waitMs <= maxRetryWaitMs) {
          await res.body?.cancel();
          limitedWaitMs = waitMs;
          await sleep(waitMs);
          continue;
        }
      }
      const unknownOutcome = res.status === 502 || res.status === 504;
      // A keyed retry that meets its first attempt still running waits for it, then gets its stored answer.
      const firstAttemptRunning = idempotencyKey !== undefined && (await isStillProcessing(res));
      if (mayRetry && (res.status === 503 || (retriesUnknownOutcome && unknownOutcome) || firstAttemptRunning)) {
        await res.body?.cancel();
        await backOff();
        continue;
      }
      return answer(contract, res);
    }
  }

  async function answer<C extends RouteContract>(contract: C, res: Response): Promise<CallOutput<C>> {
    options.onResponse?.({ route: routeName(contract), status: res.status, headers: res.headers });
    if (res.ok && answersBytes(contract)) return new Uint8Array(await res.arrayBuffer()) as CallOutput<C>;
    const text = await res.text();
    let body: unknown;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      body = text;
    }
    if (!res.ok) {
      const message = typeof (body as { error?: unknown })?.error === 'string' ? (body as { error: string }).error : `HTTP ${res.status}`;
      throw new ApiError(res.status, message, routeName(contract), body, { retryAfter: retryAfterOf(res.headers) });
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

/** Where a call goes: the path with its parameters filled, and the query. */
function urlOf(contract: RouteContract, input: Record<string, unknown>, baseUrl: string): URL {
  const params = (input.params as Record<string, unknown> | undefined) ?? {};
  const path = contract.path.replace(/:(\w+)/g, (_, name: string) => {
    const value = params[name];
    if (value === undefined || value === null) throw new ApiError(0, `Missing path parameter ${name}`, routeName(contract));
    return encodeURIComponent(String(value));
  });
  const url = new URL(path, baseUrl);
  for (const [key, value] of Object.entries((input.query as Record<string, unknown>) ?? {})) {
    if (value !== undefined && value !== null) url.searchParams.set(key, String(value));
  }
  return url;
}

/** A POST that can create (201 as its status or as an alternative): it carries an Idempotency-Key, so that it can be retried. */
function mayCreate(contract: RouteContract): boolean {
  return contract.method === 'POST' && (contract.status === 201 || contract.alternatives?.[201] !== undefined);
}

/**
 * A route that serves a file: its contract response is a z.custom (the contracts' FileBytes, the
 * stream a service pipes out), which has no JSON form, so its answer is handed over as the bytes.
 */
function answersBytes(contract: RouteContract): boolean {
  return contract.response?.def.type === 'custom';
}

/** Retry-After in seconds: a number of seconds, or an HTTP date turned into the seconds until it. */
function retryAfterOf(headers: Headers): number | undefined {
  const value = headers.get('retry-after')?.trim();
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds);
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - Date.now()) / 1000));
}

/** The 409 a keyed request gets while an attempt with its key is still running (read from a copy: the answer stays unread). */
async function isStillProcessing(res: Response): Promise<boolean> {
  return res.status === 409 && KEY_STILL_PROCESSING.test(await res.clone().text());
}

function routeName(contract: RouteContract): string {
  return `${contract.method} ${contract.path}`;
}

function isTokenPair(body: unknown): body is TokenPair {
  return typeof (body as TokenPair)?.token === 'string' && typeof (body as TokenPair)?.refreshToken === 'string';
}
