import proxy from '@fastify/http-proxy';
import type { FastifyInstance } from 'fastify';
import type { GatewayConfig } from '../config.ts';
import { proxyTargets } from '../upstreams.ts';

/**
 * Forwards each prefix to its service. The Authorization header travels unchanged (services
 * verify it themselves); the request id travels as x-request-id. A service that is down answers
 * 503 at once; one that does not answer in time, 504.
 */
export async function proxyRoutes(app: FastifyInstance, config: GatewayConfig): Promise<void> {
  for (const { prefix, service, url } of proxyTargets(config)) {
    await app.register(proxy, {
      upstream: url,
      prefix,
      rewritePrefix: prefix,
      undici: {
        connections: 128,
        pipelining: 1,
        keepAliveTimeout: 60_000,
        headersTimeout: config.UPSTREAM_TIMEOUT_MS,
        bodyTimeout: config.UPSTREAM_TIMEOUT_MS,
      },
      replyOptions: {
        rewriteRequestHeaders: (req, headers) => ({ ...headers, 'x-request-id': req.id }),
        onError: (reply, { error }) => {
          const timedOut = /timeout/i.test(`${(error as { code?: string }).code} ${error.message}`);
          if (!timedOut) reply.log.warn({ err: error, service }, 'upstream unavailable');
          reply
            .code(timedOut ? 504 : 503)
            .send({ error: timedOut ? `The ${service} service did not answer in time` : `The ${service} service is unavailable` });
        },
      },
    });
  }
}
