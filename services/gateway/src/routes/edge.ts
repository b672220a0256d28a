import { ROUTE_PREFIXES, type RouteContract, type ServiceName } from '@chat/contracts';
import {
  AppError,
  badRequest,
  bearerToken,
  IDEMPOTENCY_HEADER,
  REPLAYED_HEADER,
  SESSION_REVOKED,
  setMetricsRoute,
  type TokenVerifier,
  tooManyRequests,
  unauthorized,
  unverifiedSessionId,
} from '@chat/kit';
import cors, { type FastifyCorsOptions, type FastifyCorsOptionsDelegateCallback } from '@fastify/cors';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { GatewayConfig } from '../config.ts';
import { createClientIpResolver, rateSubject } from '../domain/client-ip.ts';
import { type EdgeVerdict, type RateCheck, type RateLimiter, rateLimitHeaders } from '../domain/rate-limit.ts';
import { createRouteTable, type RouteClass } from '../domain/route-table.ts';
import { SECURITY_HEADERS } from '../domain/security-headers.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** The client IP of spec section 8 (proxy headers only from trusted peers). */
    clientIp: string;
    /** The service the route contract names ('' when no contract describes the path: the prefix decides). */
    routedService: ServiceName | '';
    /** Set on a webhook execution: moves its count to the client's General window if it fails. */
    chargeToClient?: () => Promise<void>;
    /** The user of a verified access token ('' on public routes). */
    userId: string;
  }
}

export interface EdgeDeps {
  config: GatewayConfig;
  /** The route contracts requests are classified (and routed) by. */
  routes: RouteContract[];
  tokens: TokenVerifier;
  limiter: RateLimiter;
}

// The process probes of registerHealth: for the orchestrator, not for clients, never limited.
const PROBES = new Set(['/health/live', '/health/ready']);

/**
 * Everything the edge checks before a request reaches a service: CORS and security headers, the
 * client IP, the rate tier (every answer carries X-RateLimit-*), the declared body size, and the
 * access token on every route that is not public.
 */
export async function edge(app: FastifyInstance, deps: EdgeDeps): Promise<void> {
  // Before cors's own onRequest hook, which answers a preflight there and then.
  app.addHook('onRequest', (_req, reply, done) => {
    reply.headers(SECURITY_HEADERS);
    done();
  });
  await app.register(cors, corsOptions(deps.config.CORS_ORIGINS));
  const classify = createRouteTable(deps.routes, Object.keys(ROUTE_PREFIXES));
  const clientIp = createClientIpResolver(deps.config.TRUSTED_PROXIES, deps.config.FORWARDED_FOR_MODE);
  app.decorateRequest('clientIp', '');
  app.decorateRequest('routedService', '');
  app.decorateRequest('chargeToClient', undefined);
  app.decorateRequest('userId', '');

  app.addHook('onRequest', async (req, reply) => {
    if (PROBES.has(req.url)) return;
    req.clientIp = clientIp(req.socket.remoteAddress, req.headers);
    const route = classify(req.method, req.url);
    if (route.pattern) setMetricsRoute(req, route.pattern);
    req.routedService = route.service ?? '';
    const client = rateSubject(req.clientIp);
    const token = route.auth ? bearerToken(req.headers.authorization) : undefined;
    const verdict = await countInWindow(deps.limiter, reply, {
      tier: route.tier,
      subject: route.webhookId ?? client,
      client: route.webhookId ? client : undefined,
      // A client reuses its token: the session of one verified before needs no decoding.
      sessionId: token ? (deps.tokens.sessionOf?.(token) ?? unverifiedSessionId(token)) : undefined,
    });
    req.chargeToClient = verdict.chargeToClient;
    if (route.refused) throw badRequest(route.refused);
    checkBodySize(req, route, deps.config.BODY_LIMIT_BYTES);
    if (route.auth) {
      if (!token) throw unauthorized('Missing bearer token');
      if (verdict.revoked) throw unauthorized(SESSION_REVOKED);
      req.userId = (await deps.tokens.verify(token)).id;
    }
    if (req.is404 && !ROUTED_METHODS.has(req.method)) refuseUnroutedMethod(req, classify);
  });

  // A webhook execution the service refused (wrong token, unknown webhook, bad body) counts for the
  // client, not against the webhook's own window. Before the answer leaves, so that the client's
  // next request already sees it.
  // A callback hook: the common case (not a failed webhook execution) costs no promise.
  app.addHook('onSend', (req, reply, payload, done) => {
    const failed = reply.statusCode >= 400 && reply.statusCode < 500 && reply.statusCode !== 429;
    if (!req.chargeToClient || !failed) return done(null, payload);
    req
      .chargeToClient()
      .catch((err) => req.log.warn({ err }, 'could not move a failed webhook execution to the client window'))
      .then(() => done(null, payload));
  });
}

/**
 * The router answers a URL that does not decode (and a path parameter over the limit) before any
 * hook runs, so the edge's check above never sees it: createHttpApp asks this first. Counted in the
 * client's General window, such an answer carries X-RateLimit-* and is refused 429 like any other
 * (before, a client could send malformed URLs without limit).
 */
export function countRouterAnswers(
  deps: Pick<EdgeDeps, 'config' | 'limiter'>,
): (req: FastifyRequest, reply: FastifyReply) => Promise<void> {
  const clientIp = createClientIpResolver(deps.config.TRUSTED_PROXIES, deps.config.FORWARDED_FOR_MODE);
  const corsHeaders = ordinaryCorsHeaders(deps.config.CORS_ORIGINS);
  return async (req, reply) => {
    reply.headers(corsHeaders(req.headers.origin));
    req.clientIp = clientIp(req.socket.remoteAddress, req.headers);
    await countInWindow(deps.limiter, reply, { tier: 'general', subject: rateSubject(req.clientIp) });
  };
}

/** Counts a request in its window: its answer carries X-RateLimit-*, and one over the limit is refused 429. */
async function countInWindow(limiter: RateLimiter, reply: FastifyReply, check: RateCheck): Promise<EdgeVerdict> {
  const verdict = await limiter.hit(check);
  reply.headers(rateLimitHeaders(verdict));
  if (!verdict.allowed) throw tooManyRequests((verdict.resetAtMs - verdict.nowMs) / 1000, 'Too many requests, slow down and retry later');
  return verdict;
}

/** The methods the proxy forwards, and OPTIONS (cors's route): a request with any other reaches no route. */
const ROUTED_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);
const CONTRACT_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

/**
 * A method no route serves (PROPFIND, TRACE) would get the not-found answer, whose Allow names every
 * method of the proxy's catch-all routes: the contracts name the path's own. A path no contract
 * describes is left to that answer.
 */
function refuseUnroutedMethod(req: FastifyRequest, classify: (method: string, url: string) => RouteClass): void {
  const allowed = CONTRACT_METHODS.filter((method) => classify(method, req.url).pattern !== undefined);
  if (allowed.length === 0) return;
  const path = req.url.split('?')[0] ?? '/';
  throw new AppError(405, `Method ${req.method} not allowed on ${path}`, { headers: { allow: allowed.join(', ') } });
}

/**
 * Proxied bodies stream through without being parsed, so Fastify's bodyLimit does not see them:
 * the declared length is checked here, and each service enforces its own limit on what arrives.
 */
function checkBodySize(req: FastifyRequest, route: RouteClass, limit: number): void {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (!route.multipart && declared > limit) throw new AppError(413, 'Request body is too large');
}

/** The answer headers a page may read: why it was refused, how long to wait, which request it was. */
const EXPOSED_HEADERS = ['retry-after', 'x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'x-request-id', REPLAYED_HEADER];

/**
 * The CORS headers cors gives an ordinary answer (corsOptions), for the router's own answers, which
 * no hook sees: without them a browser hides a malformed URL's 400 (and its 429) from the page.
 */
function ordinaryCorsHeaders(origins: string[]): (origin: string | undefined) => Record<string, string> {
  const exposed = { 'access-control-expose-headers': EXPOSED_HEADERS.join(', ') };
  if (origins.includes('*')) return () => ({ 'access-control-allow-origin': '*', ...exposed });
  // With no origin allowed, cors still marks the answer as depending on Origin.
  if (origins.length === 0) return () => ({ vary: 'Origin' });
  const always = { ...exposed, vary: 'Origin' };
  return (origin) => (origin && origins.includes(origin) ? { 'access-control-allow-origin': origin, ...always } : always);
}

/**
 * A preflight (an OPTIONS naming its Origin and the method it asks for) is answered by cors; any
 * other OPTIONS is an ordinary request, answered by the routes like any other method (a 405 with
 * Allow, a 404) rather than cors's text/plain "Invalid Preflight Request".
 */
function corsOptions(origins: string[]): { delegator: FastifyCorsOptionsDelegateCallback } {
  const options: FastifyCorsOptions = {
    origin: origins.includes('*') ? '*' : origins.length > 0 ? origins : false,
    methods: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'],
    allowedHeaders: ['authorization', 'content-type', 'x-request-id', IDEMPOTENCY_HEADER],
    exposedHeaders: EXPOSED_HEADERS,
    maxAge: 600,
  };
  const otherRequests: FastifyCorsOptions = { ...options, preflight: false };
  const isPreflight = (req: FastifyRequest) =>
    req.method === 'OPTIONS' && req.headers.origin !== undefined && req.headers['access-control-request-method'] !== undefined;
  return { delegator: (req, answer) => answer(null, isPreflight(req) ? options : otherRequests) };
}
