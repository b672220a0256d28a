import type { RouteContract } from '@chat/contracts';
import type { HealthCheck, Logger, TokenVerifier } from '@chat/kit';
import type { GatewayConfig } from './config.ts';
import type { RateLimiter } from './domain/rate-limit.ts';
import type { Realtime } from './realtime.ts';

/** Everything the gateway's routes and domain receive from main. */
export interface GatewayDeps {
  config: GatewayConfig;
  log: Logger;
  /** Readiness of the gateway's own backing parts. */
  checks: Record<string, HealthCheck>;
  /** Verifies access tokens against auth's JWKS. */
  tokens: TokenVerifier;
  limiter: RateLimiter;
  /** The route contracts requests are classified and routed by (ALL_ROUTES unless a test adds one). */
  routes?: RouteContract[];
  /** The real-time socket; without it (tests of the edge) only `GET /v1/gateway` is served. */
  realtime?: Realtime;
}
