import { defineScenario } from '../scenario.ts';

/** The gateway's own route: no token, one rate check, and a readiness call to each of the five services. */
export const gatewayHealth = defineScenario({
  name: 'gateway.health',
  summary: 'GET /v1/health through the gateway (fans out to every service /health/ready)',
  setup: async () => ({ requests: [{ method: 'GET', path: '/v1/health' }] }),
});

/**
 * The gateway's own cost: one cheap, public GET sent through the gateway and straight to its
 * service. Auth's key set is the cheapest real route that exists on every platform (no token, no
 * database), so the ratio is the proxy hop and the edge's checks, not the service's work. A 404
 * would not be fair: the edge may answer it without a hop.
 */
export const authJwks = defineScenario({
  name: 'auth.jwks',
  summary: 'GET /v1/auth/jwks through the gateway and straight to auth',
  direct: 'auth',
  setup: async (ctx) => {
    const probe = await ctx.api('GET', '/v1/auth/jwks', { base: ctx.urls.auth });
    if (probe.status !== 200) return { skip: `auth does not serve GET /v1/auth/jwks yet (answered ${probe.status})` };
    return { requests: [{ method: 'GET', path: '/v1/auth/jwks' }] };
  },
});
