import Fastify from 'fastify';
import { afterAll, describe, expect, it } from 'vitest';
import { createTestIssuer, startGateway } from './helpers.ts';

/** A service whose JWKS may be cached and whose other answers say nothing of caching. */
const service = Fastify();
service.get('/v1/auth/jwks', async (_req, reply) => reply.header('cache-control', 'public, max-age=300').send({ keys: [] }));
service.post('/v1/auth/login', async () => ({ accessToken: 'a', refreshToken: 'r' }));
const upstreamUrl = await service.listen({ port: 0, host: '127.0.0.1' });
const issuer = await createTestIssuer();
const gateway = await startGateway({ upstreamUrl, keys: issuer.keys });
afterAll(async () => {
  await gateway.close();
  await service.close();
});

describe('Cache-Control at the gateway', () => {
  it("passes a service's own Cache-Control through, and marks no-store a proxied answer without one and the gateway's own answers", async () => {
    const jwks = await gateway.app.inject({ method: 'GET', url: '/v1/auth/jwks' });
    const login = await gateway.app.inject({ method: 'POST', url: '/v1/auth/login', payload: { login: 'a', password: 'b' } });
    const refused = await gateway.app.inject({ method: 'GET', url: '/v1/users/@me' });
    const health = await gateway.app.inject({ method: 'GET', url: '/v1/health' });
    expect({
      jwks: [jwks.statusCode, jwks.headers['cache-control']],
      login: [login.statusCode, login.headers['cache-control']],
      refused: [refused.statusCode, refused.headers['cache-control']],
      health: [health.statusCode < 600, health.headers['cache-control']],
    }).toEqual({
      jwks: [200, 'public, max-age=300'],
      login: [200, 'no-store'],
      refused: [401, 'no-store'],
      health: [true, 'no-store'],
    });
  });
});
