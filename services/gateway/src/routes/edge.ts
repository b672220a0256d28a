import { ALL_ROUTES, ROUTE_PREFIXES } from '@chat/contracts';
import { AppError, bearerToken, setMetricsRoute, type TokenVerifier, tooManyRequests, unauthorized } from '@chat/kit';
import cors from '@fastify/cors';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { GatewayConfig } from '../config.ts';
import { createClientIpResolver } from '../domain/client-ip.ts';
import type { WindowVerdict } from '../domain/memory-window.ts';
import type { RateLimiter } from '../domain/rate-limit.ts';
import { createRouteTable, type RouteClass } from '../domain/route-table.ts';
import { SECURITY_HEADERS } from '../domain/security-headers.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** The client IP of spec section 8 (proxy headers only from trusted peers). */
    clientIp: string;
  }
}

export interface EdgeDeps {
  config: GatewayConfig;
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
  await app.register(cors, corsOptions(deps.config.CORS_ORIGINS));
  const classify = createRouteTable(ALL_ROUTES, Object.keys(ROUTE_PREFIXES));
  const clientIp = createClientIpResolver(deps.config.TRUSTED_PROXIES);
  app.decorateRequest('clientIp', '');

  app.addHook('onRequest', async (req, reply) => {
    reply.headers(SECURITY_HEADERS);
    if (PROBES.has(req.url)) return;
    req.clientIp = clientIp(req.socket.remoteAddress, req.headers);
    const route = classify(req.method, req.url);
    if (route.pattern) setMetricsRoute(req, route.pattern);
    const verdict = await deps.limiter.hit(route.tier, route.webhookId ?? req.clientIp);
    setRateHeaders(reply, verdict);
    if (!verdict.allowed) throw tooManyRequests((verdict.resetAtMs - verdict.nowMs) / 1000, 'Too many requests, slow down and retry later');
    checkBodySize(req, route, deps.config.BODY_LIMIT_BYTES);
    if (route.auth) await checkToken(req, deps.tokens);
  });
}

function setRateHeaders(reply: FastifyReply, verdict: WindowVerdict): void {
  reply.headers({
    'x-ratelimit-limit': verdict.limit,
    'x-ratelimit-remaining': Math.max(0, verdict.remaining),
    'x-ratelimit-reset': Math.ceil(verdict.resetAtMs / 1000),
  });
}

/**
 * Proxied bodies stream through without being parsed, so Fastify's bodyLimit does not see them:
 * the declared length is checked here, and each service enforces its own limit on what arrives.
 */
function checkBodySize(req: FastifyRequest, route: RouteClass, limit: number): void {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (!route.multipart && declared > limit) throw new AppError(413, 'Request body is too large');
}

async function checkToken(req: FastifyRequest, tokens: TokenVerifier): Promise<void> {
  const token = bearerToken(req.headers.authorization);
  if (!token) throw unauthorized('Missing bearer token');
  await tokens.verify(token);
}

function corsOptions(origins: string[]) {
  return {
    origin: origins.includes('*') ? '*' : origins.length > 0 ? origins : false,
    methods: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'],
    allowedHeaders: ['authorization', 'content-type', 'x-request-id'],
    exposedHeaders: ['retry-after', 'x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'x-request-id'],
    maxAge: 600,
  };
}
