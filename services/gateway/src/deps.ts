import type { HealthCheck, Logger, TokenVerifier } from '@chat/kit';
import type { GatewayConfig } from './config.ts';
import type { RateLimiter } from './domain/rate-limit.ts';

/** Everything the gateway's routes and domain receive from main (the gateway has no database or bus). */
export interface GatewayDeps {
  config: GatewayConfig;
  log: Logger;
  /** Readiness of the gateway's own backing parts. */
  checks: Record<string, HealthCheck>;
  /** Verifies access tokens against auth's JWKS. */
  tokens: TokenVerifier;
  limiter: RateLimiter;
}
