import { randomUUID } from 'node:crypto';
import { type IncomingHttpHeaders, STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { BodyOf, ParamsOf, QueryOf, ReplyOf, RouteContract } from '@chat/contracts';
import type { Span } from '@opentelemetry/api';
import Fastify, { type FastifyBaseLogger, type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import FindMyWay from 'find-my-way';
import type { Logger } from 'pino';
import type { z } from 'zod';
import type { Pool } from './db.ts';
import { AppError, PUBLIC_MESSAGES } from './errors.ts';
import { type IdempotencyScope, idempotencyKeyOf, runIdempotent, userIdempotencyScope } from './idempotency.ts';
import { redactUrl } from './logger.ts';
import { httpRequestDuration } from './metrics.ts';
import { bearerToken, type Identity, type TokenVerifier } from './tokens.ts';
import { endSpan, extractContext, SpanKind, startSpan, tracingEnabled, withSpan } from './tracing.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** The verified caller; set on every authenticated route. */
    user: Identity;
  }
  interface FastifyInstance {
    /** Every contract this app registered (the OpenAPI coverage test reads it). */
    contracts: RouteContract[];
    /** Every method and path registered, by route() or otherwise (HEAD excluded). */
    registeredRoutes: RegisteredRoute[];
    httpOptions: HttpAppOptions;
    /**
     * Resolves once every route handler already running has finished, including handlers whose
     * client hung up: Fastify's close() only waits for the connections.
     */
    handlersSettled(): Promise<void>;
    /** The handlers route() has started whose promise has not settled yet. */
    runningHandlers: Set<Promise<unknown>>;
  }
}

export interface RegisteredRoute {
  method: string;
  path: string;
}

export interface HttpAppOptions {
  log: Logger;
  /** Verifies bearer tokens on authenticated routes. */
  tokens?: TokenVerifier;
  bodyLimit?: number;
  /** Trust X-Forwarded-* from these peers (the gateway passes the client IP on). */
  trustProxy?: boolean | string | string[];
  /** Longest path parameter the router matches (default 100); longer ones answer 404. */
  maxParamLength?: number;
  /** The service's database: where idempotent routes keep their keys (see route()'s `idempotent`). */
  pool?: Pool;
  /**
   * The paths (without query) whose requests may upgrade the connection; every other request that
   * offers an upgrade (`curl --http2`'s h2c) is served as a plain request. Without it, none upgrades.
   */
  upgradesAt?: (path: string) => boolean;
  /** Headers of every answer, also of those made before any hook runs (a malformed URL, a request Node's parser refuses). */
  answerHeaders?: Readonly<Record<string, string>>;
  /** False for an app that forwards request bodies unread (the gateway): it keeps Fastify's own JSON parser, which a proxy replaces. */
  parsesBodies?: boolean;
  /**
   * Awaited before the router's own answers (a URL that does not decode, a path parameter over the
   * limit), which no hook sees: an app that checks every request (the gateway's rate tiers) checks
   * these here. The headers it sets stay on the answer; an error it throws is answered instead.
   */
  beforeRouterAnswer?: (req: FastifyRequest, reply: FastifyReply) => Promise<void>;
}

export interface RouteOptions {
  /**
   * Accept an `Idempotency-Key` header, keys scoped to the caller (`'user'`) or to what the
   * function derives from the request: the handler then runs in one transaction with the stored
   * answer (see runIdempotent). For creating POSTs.
   */
  idempotent?: IdempotencyScope;
  /**
   * With `idempotent`, for an answer that holds a secret shown once (a webhook's token): the stored
   * answer is encrypted under the client's key, and the key kept only as its hash (see sealedClaim).
   */
  sealed?: boolean;
}

/** The option of a creating POST whose Idempotency-Keys belong to the caller. */
export const IDEMPOTENT: RouteOptions = { idempotent: 'user' };

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
/** What every answer carries unless its route set its own, also those made before any hook runs. */
const DEFAULT_ANSWER_HEADERS = { 'cache-control': 'no-store' } as const;
// The 405 lookup must match paths exactly as the app's router does.
const ROUTER_OPTIONS = { ignoreTrailingSlash: true, caseSensitive: true };
const CONTEXT_NAMES: Record<string, string> = { querystring: 'query', params: 'path', body: 'body', headers: 'header' };

/**
 * The id a request is logged under: its x-request-id when well formed (the gateway's, or a
 * client's), else a new one. For what Fastify's router does not see (a socket's upgrade).
 */
export function requestIdOf(headers: IncomingHttpHeaders): string {
  const given = headers['x-request-id'];
  // Node's randomUUID draws from a cache of random bytes; uuid's v7 makes a getrandom call for each id.
  return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
}

/** A Fastify app with the platform's conventions; it never listens by itself. */
export function createHttpApp(options: HttpAppOptions): FastifyInstance {
  const app = Fastify({
    loggerInstance: options.log as FastifyBaseLogger,
    bodyLimit: options.bodyLimit ?? 1024 * 1024,
    // Not `requestIdHeader`: Fastify would take the header as is and skip genReqId's check.
    requestIdHeader: false,
    genReqId: (req) => requestIdOf(req.headers),
    trustProxy: options.trustProxy ?? false,
    // Node hands every request that offers an upgrade to the 'upgrade' listener when there is one.
    // An HTTP/1.1 request without Host is refused below in {"error"}, not by Node with an empty 400.
    http: { shouldUpgradeCallback: (req) => options.upgradesAt?.(req.url?.split('?')[0] ?? '/') ?? false, requireHostHeader: false },
    routerOptions: { ...ROUTER_OPTIONS, maxParamLength: options.maxParamLength ?? 100 },
    frameworkErrors: (error, req, reply) => void answerRouterError(error, req, reply as unknown as FastifyReply, options),
    clientErrorHandler: (err, socket) => answerClientError(err, socket, options.answerHeaders ?? {}),
  });
  if (options.parsesBodies !== false) parseJsonBodies(app);
  const methodsByPath = FindMyWay({ ...ROUTER_OPTIONS, maxParamLength: options.maxParamLength ?? 100 });
  const running = new Set<Promise<unknown>>();
  app.decorate('runningHandlers', running);
  app.decorate('handlersSettled', async () => {
    await Promise.allSettled([...running]);
  });
  app.decorate('contracts', [] as RouteContract[]);
  app.decorate('registeredRoutes', [] as RegisteredRoute[]);
  app.decorateRequest('user', undefined as unknown as Identity);
  // The hooks every request runs are callback hooks: an async one costs each request a promise.
  app.addHook('onRequest', (req, reply, done) => {
    reply.header('x-request-id', req.id);
    if (req.headers.host === undefined && req.raw.httpVersion === '1.1') {
      // RFC 9112 §3.2: a 1.1 request without Host is answered 400. Replying ends the hook chain.
      reply
        .headers(options.answerHeaders ?? {})
        .header('connection', 'close')
        .code(400)
        .send({ error: 'A Host header is required' });
      return;
    }
    done();
  });
  if (tracingEnabled()) traceRequests(app);
  // By route pattern, never by path: ids in paths would make a series per id.
  app.addHook('onResponse', (req, reply, done) => {
    const route = metricsRoutes.get(req) ?? req.routeOptions.url ?? 'unmatched';
    httpRequestDuration.observe({ method: req.method, route, status_code: String(reply.statusCode) }, reply.elapsedTime / 1000);
    done();
  });
  // While closing, each answer ends its keep-alive connection, and connections that carry none yet
  // are kept for IDLE_DRAIN_MS (see drainIdleConnections).
  let closing = false;
  const drain = drainIdleConnections(app);
  app.addHook('preClose', async () => {
    closing = true;
    drain.start();
  });
  app.addHook('onSend', (_req, reply, payload, done) => {
    if (closing) reply.header('connection', 'close');
    // Answers carry tokens (RFC 6749 5.1) and callers' private records: no cache keeps one unless
    // its route says how (the JWKS). A proxy's hook sees the service's own value and keeps it.
    if (!reply.hasHeader('cache-control')) reply.header('cache-control', DEFAULT_ANSWER_HEADERS['cache-control']);
    done(null, payload);
  });
  app.addHook('onRoute', (r) => {
    for (const method of [r.method].flat()) {
      if (method === 'HEAD' || methodsByPath.hasRoute(method as 'GET', r.url)) continue;
      methodsByPath.on(method as 'GET', r.url, () => {});
      app.registeredRoutes.push({ method, path: r.url });
    }
  });

  app.setValidatorCompiler(({ schema, httpPart }) => {
    const zodSchema = schema as unknown as z.ZodType;
    const part = CONTEXT_NAMES[httpPart ?? 'body'] ?? httpPart;
    return (data: unknown) => {
      const result = zodSchema.safeParse(data);
      if (result.success) return { value: result.data };
      const issue = result.error.issues[0];
      const field = [part, ...(issue?.path ?? [])].join('.');
      return { error: new AppError(400, `${field}: ${issue?.message ?? 'invalid'}`) };
    };
  });

  app.setErrorHandler(sendError);

  app.setNotFoundHandler((req, reply) => {
    const path = req.url.split('?')[0] ?? '/';
    const allowed = (['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const).filter((m) => methodsByPath.find(m, path));
    if (allowed.length)
      return reply
        .code(405)
        .header('allow', allowed.join(', '))
        .send({ error: `Method ${req.method} not allowed on ${path}` });
    return reply.code(404).send({ error: `No route ${req.method} ${path}` });
  });

  app.decorate('httpOptions', options);
  return app;
}

/** Answers an error in the platform's {"error"} shape, logging the cause of a 5xx. */
function sendError(error: unknown, req: FastifyRequest, reply: FastifyReply): void {
  const { status, message, headers } = toHttpError(error);
  if (status >= 500) req.log.error({ err: error }, 'request failed');
  reply.headers(headers).code(status).send({ error: message });
}

/**
 * The router's own answers (a path parameter over the limit, a URL that does not decode) in the
 * platform's {"error"} shape rather than Fastify's {error, code, message, statusCode}, after the
 * app's beforeRouterAnswer: no hook runs for them, and the headers every answer carries are set here.
 */
async function answerRouterError(error: FastifyError, req: FastifyRequest, reply: FastifyReply, options: HttpAppOptions): Promise<void> {
  reply.headers({ ...options.answerHeaders, ...DEFAULT_ANSWER_HEADERS, 'x-request-id': req.id });
  try {
    await options.beforeRouterAnswer?.(req, reply);
  } catch (err) {
    return sendError(err, req, reply);
  }
  const path = req.url.split('?')[0] ?? '/';
  if (error.code === 'FST_ERR_MAX_PARAM_LENGTH') reply.code(404).send({ error: `No route ${req.method} ${path.slice(0, 200)}` });
  else reply.code(400).send({ error: 'Malformed URL' });
}

/**
 * How long a stopping process keeps the connections that carry no request open. Clients must close
 * an idle connection sooner (the gateway: UPSTREAM_KEEP_ALIVE_MS); SHUTDOWN_GRACE_MS must be longer.
 */
export const IDLE_DRAIN_MS = 3_000;

/**
 * Node's server.close() cuts idle keep-alive connections at once (and we cut those that have not
 * sent a byte, which Node counts as busy until headersTimeout). But a client may be writing a
 * request on one at that moment: it sees the connection reset, and cannot tell whether the request
 * was done (the gateway answers 502). So, while stopping, these connections stay open for
 * IDLE_DRAIN_MS: a request arriving on one is answered 503 with `Connection: close` (Fastify's
 * return503OnClosing: nothing was done, the client may retry elsewhere), and a client whose
 * keep-alive is shorter closes it itself first. Whatever is still open then is cut.
 */
function drainIdleConnections(app: FastifyInstance) {
  const server = app.server;
  const sockets = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  const closeIdle = server.closeIdleConnections.bind(server);
  return {
    start() {
      if (!server.listening) return;
      server.closeIdleConnections = () => {};
      const timer = setTimeout(() => {
        closeIdle();
        for (const socket of sockets) if (socket.bytesRead === 0) socket.destroy();
      }, IDLE_DRAIN_MS);
      // The server's close ends the wait as soon as its last connection has gone.
      server.once('close', () => clearTimeout(timer));
    },
  };
}

const metricsRoutes = new WeakMap<FastifyRequest, string>();
const requestSpans = new WeakMap<FastifyRequest, Span>();

/**
 * A server span per request, continuing the caller's trace (W3C traceparent) or starting one; its
 * trace id joins the request id in the request's log lines. Installed only when tracing is on.
 */
function traceRequests(app: FastifyInstance): void {
  app.addHook('onRequest', async (req, reply) => {
    const span = startSpan(req.method, {
      kind: SpanKind.SERVER,
      parent: extractContext(req.headers),
      // Spans leave the process: a secret in the path (a webhook's token) is redacted as in the logs.
      attributes: { 'http.request.method': req.method, 'url.path': redactUrl(req.url.split('?')[0] ?? '/') },
    });
    if (!span) return;
    requestSpans.set(req, span);
    // The reply logs "request completed" with a logger of its own.
    req.log = reply.log = req.log.child({ traceId: span.spanContext().traceId });
  });
  app.addHook('onResponse', async (req, reply) => {
    const span = requestSpans.get(req);
    if (!span) return;
    const route = metricsRoutes.get(req) ?? req.routeOptions.url;
    if (route) {
      span.updateName(`${req.method} ${route}`);
      span.setAttribute('http.route', route);
    }
    span.setAttribute('http.response.status_code', reply.statusCode);
    endSpan(span, reply.statusCode >= 500 ? new Error(`answered ${reply.statusCode}`) : undefined);
  });
}

/** The request's server span, for a hop the request makes that the kit does not (the gateway's proxy). */
export function requestSpan(req: FastifyRequest): Span | undefined {
  return requestSpans.get(req);
}

/**
 * Names the route pattern a request is counted under in the metrics, where Fastify's own route is
 * coarser: the gateway proxies a whole prefix (`/v1/guilds/*`) but knows each request's contract.
 */
export function setMetricsRoute(req: FastifyRequest, pattern: string): void {
  metricsRoutes.set(req, pattern);
}

/** Maps any error (ours, Fastify's, a validation failure) onto a status and a public message. */
export function toHttpError(error: unknown): { status: number; message: string; headers: Record<string, string> } {
  if (error instanceof AppError) {
    return {
      status: error.status,
      message: error.status >= 500 ? (PUBLIC_MESSAGES[error.status] ?? error.message) : error.message,
      headers: error.headers,
    };
  }
  const e = error as { statusCode?: number; code?: string; message?: string };
  const status = typeof e.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 600 ? e.statusCode : 500;
  if (status >= 500) return { status, message: PUBLIC_MESSAGES[status] ?? 'Internal server error', headers: {} };
  const known: Record<string, string> = {
    FST_ERR_CTP_INVALID_MEDIA_TYPE: 'Unsupported Content-Type; send application/json',
    FST_ERR_CTP_BODY_TOO_LARGE: 'Request body is too large',
    FST_ERR_CTP_EMPTY_JSON_BODY: 'Body cannot be empty when Content-Type is application/json',
    FST_ERR_CTP_INVALID_JSON_BODY: 'Malformed JSON body',
  };
  const message = (e.code && known[e.code]) || (e.code === undefined || e.code === 'FST_ERR_VALIDATION' ? e.message : undefined);
  return { status, message: message || (PUBLIC_MESSAGES[status] ?? 'Bad request'), headers: {} };
}

export type RouteHandler<C extends RouteContract> = (
  req: FastifyRequest<{ Body: BodyOf<C>; Querystring: QueryOf<C>; Params: ParamsOf<C> }>,
  reply: FastifyReply,
) => Promise<ReplyOf<C>>;

/**
 * Registers the handler of a contract: input validated by the contract's zod schemas, the bearer
 * token verified unless the route is public, the success status taken from the contract, and the
 * answer parsed (and so stripped) by the contract's response schema.
 */
export function route<C extends RouteContract>(
  app: FastifyInstance,
  contract: C,
  handler: RouteHandler<C>,
  routeOptions: RouteOptions = {},
): void {
  const options = app.httpOptions;
  const tokens = options.tokens;
  if (contract.auth && !tokens) throw new Error(`${contract.method} ${contract.path} needs a token verifier`);
  const { idempotent, sealed } = routeOptions;
  if (sealed && !idempotent) throw new Error(`${contract.method} ${contract.path}: only an idempotent route's answers are sealed`);
  if (idempotent && !options.pool) throw new Error(`${contract.method} ${contract.path} is idempotent: createHttpApp needs the pool`);
  if (idempotent === 'user' && !contract.auth)
    throw new Error(`${contract.method} ${contract.path}: a public route cannot scope keys to the user`);

  /** Runs the handler and settles the status and body it answers (checked against the contract in tests). */
  async function answer(req: FastifyRequest, reply: FastifyReply): Promise<{ status: number; body: unknown } | undefined> {
    const result = await handler(req as never, reply);
    if (reply.sent) return undefined;
    if (reply.statusCode === 200 && contract.status !== 200) reply.code(contract.status);
    const schema = reply.statusCode === contract.status ? contract.response : contract.alternatives?.[reply.statusCode]?.response;
    if (reply.statusCode === 204 || !schema) return { status: reply.statusCode, body: result };
    // Every answer, in production too, is what its schema says and nothing more: parsing strips
    // what the contract does not name (a column added later cannot leak), and a reply that breaks
    // it is a bug, a 500.
    const parsed = schema.safeParse(result);
    if (!parsed.success) throw new Error(`Response of ${contract.method} ${contract.path} breaks its contract: ${parsed.error.message}`);
    return { status: reply.statusCode, body: parsed.data };
  }

  async function answerOnce(req: FastifyRequest, reply: FastifyReply, key: string) {
    const scope = idempotent === 'user' ? userIdempotencyScope(req.user.id) : (idempotent as (r: FastifyRequest) => string)(req);
    const handle = async () => {
      const settled = await answer(req, reply);
      if (!settled) throw new Error(`${contract.method} ${contract.path} sent its own reply; an idempotent route must return it`);
      return settled;
    };
    return runIdempotent(options.pool as Pool, req, reply, scope, key, handle, { sealed });
  }

  app.contracts.push(contract);
  app.route({
    method: contract.method,
    url: contract.path,
    schema: {
      ...(contract.params ? { params: contract.params } : {}),
      ...(contract.query ? { querystring: contract.query } : {}),
      ...(contract.body ? { body: contract.body } : {}),
    },
    preValidation: contract.auth
      ? async (req) => {
          const token = bearerToken(req.headers.authorization);
          if (!token) throw new AppError(401, 'Missing bearer token');
          req.user = await (tokens as TokenVerifier).verify(token);
        }
      : undefined,
    handler: async (req, reply) => {
      const key = idempotent ? idempotencyKeyOf(req) : undefined;
      // Under the request's span, so that its NATS requests and events continue the trace.
      const settled = await tracked(
        app.runningHandlers,
        withSpan(requestSpans.get(req), () => (key ? answerOnce(req, reply, key) : answer(req, reply))),
      );
      if (!settled) return reply;
      reply.code(settled.status);
      return settled.status === 204 ? reply.send() : reply.send(settled.body);
    },
  });
}

/** Awaits a command whose route answers 204 with no body: every service's handlers use this one. */
export async function noContent(work: Promise<unknown>): Promise<undefined> {
  await work;
  return undefined;
}

/** `work`, counted in `running` until it settles. */
async function tracked<T>(running: Set<Promise<unknown>>, work: Promise<T>): Promise<T> {
  running.add(work);
  try {
    return await work;
  } finally {
    running.delete(work);
  }
}

/** Who asks and under which request id: what domain functions need to know of a request. */
export interface RequestContext {
  userId: string;
  requestId: string;
  log: Logger;
}

export function contextOf(req: FastifyRequest): RequestContext {
  return { userId: req.user?.id, requestId: req.id, log: req.log as Logger };
}

// A \u escape of a surrogate in the raw body (the only way JSON text can carry a lone one), and a
// surrogate without its pair in a parsed string.
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

function holdsLoneSurrogate(value: unknown): boolean {
  if (typeof value === 'string') return LONE_SURROGATE.test(value);
  if (value === null || typeof value !== 'object') return false;
  return Object.entries(value).some(([key, inner]) => LONE_SURROGATE.test(key) || holdsLoneSurrogate(inner));
}

const CHARSET = /;\s*charset\s*=\s*"?([^";\s]*)/i;
// `utf8` is the WHATWG Encoding standard's other label of UTF-8.
const UTF8_LABELS = new Set(['utf-8', 'utf8']);
const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The one parser of request bodies: JSON in UTF-8 (RFC 8259 8.1), decoded strictly. Bytes that are
 * not UTF-8 were stored as U+FFFD, and a body in another charset as mojibake: refused (400, 415).
 * JSON may also spell a lone surrogate (`"\ud800"`), which no UTF-8 text holds: PostgreSQL refuses
 * it in jsonb and replaces it in text (an edit stored U+FFFD); only a body with such an escape is
 * searched. An empty body is no body, as without a Content-Type (a client library that always sends
 * one); a route whose schema needs a body answers 400 from it. Fastify's text/plain parser is
 * removed, so that text/plain is a 415 like any other media type that is not JSON.
 */
function parseJsonBodies(app: FastifyInstance): void {
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser(['application/json', 'text/plain']);
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (req, body, done) => {
    const charset = CHARSET.exec(req.headers['content-type'] ?? '')?.[1]?.toLowerCase();
    if (charset !== undefined && !UTF8_LABELS.has(charset))
      return done(new AppError(415, 'Unsupported charset; send application/json in UTF-8'), undefined);
    // Bodies are read as sent: a compressed one would be taken for malformed text (RFC 7694: 415).
    const encoding = req.headers['content-encoding']?.trim().toLowerCase();
    if (encoding && encoding !== 'identity')
      return done(new AppError(415, 'Unsupported Content-Encoding; send the body uncompressed'), undefined);
    if ((body as Buffer).length === 0) return done(null, undefined);
    let text: string;
    try {
      text = strictUtf8.decode(body as Buffer);
    } catch {
      return done(new AppError(400, 'body: text must be valid UTF-8'), undefined);
    }
    parseJson(req, text, (err, value) => {
      if (err || !SURROGATE_ESCAPE.test(text) || !holdsLoneSurrogate(value)) return done(err, value);
      done(new AppError(400, 'body: text must be valid Unicode (an escape spells a lone surrogate)'), undefined);
    });
  });
}

/**
 * A request Node's parser refuses (conflicting lengths, an obs-folded header, a header block past
 * its limit, no Host) never reaches Fastify: it is answered here, on the socket, in the platform's
 * `{"error"}` shape with the answer headers, and the connection is closed (what follows it on the
 * connection cannot be trusted to start where the parser thinks).
 */
function answerClientError(err: Error & { code?: string }, socket: Socket, headers: Readonly<Record<string, string>>): void {
  if (err.code === 'ECONNRESET' || !socket.writable) return void socket.destroy();
  const [status, error] =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'Request header fields too large']
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'The request took too long to arrive']
        : [400, 'Malformed HTTP request'];
  const body = JSON.stringify({ error });
  const lines = [
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}`,
    ...Object.entries({ ...headers, ...DEFAULT_ANSWER_HEADERS }).map(([name, value]) => `${name}: ${value}`),
    'content-type: application/json; charset=utf-8',
    `content-length: ${Buffer.byteLength(body)}`,
    'connection: close',
  ];
  socket.end(`${lines.join('\r\n')}\r\n\r\n${body}`);
}
