import { Buffer } from 'node:buffer';
import { Readable } from 'node:stream';
import type { RouteContract } from '@chat/contracts';
import { AppError, contextWithSpan, IDLE_DRAIN_MS, requestSpan, traceHeaders } from '@chat/kit';
import proxy from '@fastify/http-proxy';
import type { FastifyBaseLogger, FastifyInstance, FastifyRequest } from 'fastify';
import type { GatewayConfig } from '../config.ts';
import { upstreamFailure } from '../domain/upstream-failure.ts';
import { proxyTargets, type Upstream, upstreamUrls } from '../domain/upstreams.ts';
import { createUploadGuard } from './uploads.ts';

/**
 * How long an idle connection to a service is kept for the next request: a second less than a
 * stopping service keeps its idle connections open (IDLE_DRAIN_MS, see createHttpApp).
 */
export const UPSTREAM_KEEP_ALIVE_MS = IDLE_DRAIN_MS - 1_000;

/** Answers up to this size are read whole and sent in one write; larger ones (files) stream through. */
const BUFFERED_ANSWER_BYTES = 64 * 1024;
/**
 * Headers about this connection only (RFC 9110 7.6.1), which a client may send but the gateway's
 * connection to the service does not share: undici refuses some outright (`expect`, `upgrade`,
 * `keep-alive`), which answered a false 502; and a service's `connection: keep-alive` copied onto
 * the answer overrode a client's `connection: close`.
 */
const HOP_BY_HOP = ['connection', 'keep-alive', 'proxy-connection', 'upgrade', 'expect', 'te', 'http2-settings', 'trailer'];
const withoutHopByHop = <H extends Record<string, unknown>>(headers: H): H =>
  Object.fromEntries(Object.entries(headers).filter(([name]) => !HOP_BY_HOP.includes(name))) as H;

/**
 * Forwards each prefix to its service. The Authorization header travels unchanged (services
 * verify it themselves); the request id travels as x-request-id. A service that refuses the
 * connection answers 503 at once (nothing was done); one that drops the connection after the
 * request was sent, 502; one that does not answer in time, 504 (both: outcome unknown).
 */
export async function proxyRoutes(app: FastifyInstance, config: GatewayConfig, routes: RouteContract[]): Promise<void> {
  const urls = upstreamUrls(config);
  const uploads = createUploadGuard({
    idleMs: config.BODY_IDLE_TIMEOUT_MS,
    minBytesPerSecond: config.UPLOAD_MIN_BYTES_PER_SECOND,
    perUser: config.UPLOADS_IN_FLIGHT_PER_USER,
    total: config.UPLOADS_IN_FLIGHT,
  });
  // The contract's service when one describes the request (edge set it), else the prefix's owner.
  const serviceOf = (req: FastifyRequest, owner: Upstream): Upstream =>
    req.routedService && req.routedService !== 'gateway' ? req.routedService : owner;
  for (const { prefix, service: owner } of proxyTargets(config, routes)) {
    await app.register(proxy, {
      // No fixed upstream: reply-from would send every request to its origin. getUpstream picks the
      // service per request, and the undici agent keeps a pool per origin.
      upstream: '',
      prefix,
      rewritePrefix: prefix,
      handler: async (req, reply, dest, options) => {
        const body = await wholeBody(req, config.BODY_LIMIT_BYTES, config.BODY_IDLE_TIMEOUT_MS);
        if (body === undefined && isUpload(req)) uploads.watch(req, reply);
        const contentType = req.headers['content-type'] ?? 'application/octet-stream';
        return reply.from(dest, body === undefined ? options : { ...options, body, contentType });
      },
      // reply-from logs each hop's url at info ("fetching from remote server"): a webhook's token
      // with it. The gateway's own request lines say the same, redacted.
      disableRequestLogging: true,
      undici: {
        connections: 128,
        pipelining: 1,
        // The gateway closes an idle connection before a stopping service would cut it, so no
        // request is written on a connection being cut (a 502). The service's `Keep-Alive:
        // timeout=72` would otherwise raise it: keepAliveMaxTimeout caps that.
        keepAliveTimeout: UPSTREAM_KEEP_ALIVE_MS,
        keepAliveMaxTimeout: UPSTREAM_KEEP_ALIVE_MS,
        headersTimeout: config.UPSTREAM_TIMEOUT_MS,
        bodyTimeout: config.UPSTREAM_TIMEOUT_MS,
      },
      replyOptions: {
        getUpstream: (req) => urls[serviceOf(req as FastifyRequest, owner)],
        // The service continues the gateway's span (W3C traceparent) when tracing is on.
        rewriteRequestHeaders: (req, headers) => ({
          ...withoutHopByHop(headers),
          'x-request-id': req.id,
          ...traceHeaders(contextWithSpan(requestSpan(req as FastifyRequest))),
        }),
        rewriteHeaders: (headers) => withoutHopByHop(headers),
        onResponse: (req, reply, res) => {
          uploads.responded(req as FastifyRequest);
          forwardAnswer(reply, res.stream as unknown as Readable, serviceOf(req as FastifyRequest, owner));
        },
        onError: (reply, { error }) => {
          // Answered already (an upload cut short), or nobody left to answer: the client hung up.
          if (uploads.answered(reply.request as FastifyRequest) || reply.raw.destroyed) return;
          const service = serviceOf(reply.request as FastifyRequest, owner);
          const failure = upstreamFailure(error, service);
          reply.log.warn({ err: error, service, status: failure.status, reachedService: failure.reachedService }, 'upstream failed');
          reply.code(failure.status).send({ error: failure.error });
        },
      },
    });
  }
}

/** The part of a reply the forwarding uses (reply-from types it for any raw server). */
interface ProxiedReply {
  request: { method: string };
  statusCode: number;
  log: FastifyBaseLogger;
  getHeader(name: string): unknown;
  removeHeader(name: string): unknown;
  code(status: number): { type(contentType: string): { send(payload: unknown): unknown } };
  send(payload?: unknown): unknown;
}

/**
 * A small answer (nearly every JSON one) is read whole and sent as one buffer: one write to the
 * client and none of a piped stream's bookkeeping, which is most of what a hop costs. Files and
 * answers of unknown length stream through as they come. Answers that never have a body (HEAD,
 * 204, 304) are sent as they are: their Content-Length, if any, describes another answer.
 */
function forwardAnswer(reply: ProxiedReply, body: Readable, service: string): void {
  if (reply.request.method === 'HEAD' || reply.statusCode === 204 || reply.statusCode === 304) {
    body.on('error', () => {}).resume();
    return void reply.send();
  }
  // The service's headers are already on the reply.
  const length = Number(reply.getHeader('content-length'));
  if (!(length > 0 && length <= BUFFERED_ANSWER_BYTES)) return void reply.send(body);
  const chunks: Buffer[] = [];
  body.on('data', (chunk: Buffer) => chunks.push(chunk));
  body.once('end', () => reply.send(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)));
  body.once('error', (err) => {
    reply.log.warn({ err, service }, 'upstream broke off its answer');
    // The service's length no longer describes what is sent.
    reply.removeHeader('content-length');
    reply
      .code(502)
      .type('application/json; charset=utf-8')
      .send({ error: `The ${service} service broke off its answer` });
  });
}

const isUpload = (req: FastifyRequest) =>
  req.body instanceof Readable && !!req.headers['content-type']?.toLowerCase().startsWith('multipart/');

/**
 * A request body other than an upload, read whole before a connection to the service is taken: a
 * client that sends its body slowly, or stops halfway, then holds its own connection to the
 * gateway, never one of the pool's connections to the service that every client shares (128 such
 * clients would have stalled everyone's requests to it). Undefined for no body, and for multipart
 * uploads, which stream through (the service bounds them). Past `limit` bytes 413; a body that
 * pauses for `idleMs`, 408.
 */
async function wholeBody(req: FastifyRequest, limit: number, idleMs: number): Promise<Buffer | undefined> {
  const body = req.body;
  if (!(body instanceof Readable) || isUpload(req)) return undefined;
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const fail = (err: unknown) => {
      done();
      // Not destroyed: that would take the client's socket before it is told why. Node closes it after the answer.
      body.resume();
      reject(err);
    };
    const idle = setTimeout(() => fail(new AppError(408, 'The request body stopped arriving')), idleMs);
    const take = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) return fail(new AppError(413, 'Request body is too large'));
      chunks.push(chunk);
      idle.refresh();
    };
    const end = () => {
      done();
      resolve(Buffer.concat(chunks, size));
    };
    const done = () => {
      clearTimeout(idle);
      body.off('data', take).off('end', end).off('error', fail);
    };
    body.on('data', take).once('end', end).once('error', fail);
  });
}
