import { baseConfig, env, tokenConfig } from '@chat/kit';
import { z } from 'zod';

export const GatewayConfig = baseConfig.extend(tokenConfig.shape).extend({
  PORT: env.port(8080),
  AUTH_URL: z.url().default('http://127.0.0.1:3001'),
  GUILDS_URL: z.url().default('http://127.0.0.1:3002'),
  SOCIAL_URL: z.url().default('http://127.0.0.1:3003'),
  MEDIA_URL: z.url().default('http://127.0.0.1:3004'),
  MUSIC_URL: z.url().default('http://127.0.0.1:3005'),
  REDIS_URL: z
    .string()
    .regex(/^rediss?:\/\//, 'must be a redis:// URL')
    .default('redis://127.0.0.1:6379'),
  /** JSON bodies above this are 413 at the edge (media uploads have their own limit). */
  BODY_LIMIT_BYTES: env.int(1024 * 1024),
  /** Upstream answer deadline: a hung service answers 504 instead of hanging the client. */
  UPSTREAM_TIMEOUT_MS: env.int(30_000),
  /** Peers whose X-Forwarded-For / X-Real-IP are believed (addresses or CIDRs, comma-separated). */
  TRUSTED_PROXIES: env.list(),
  /**
   * `first`: the first X-Forwarded-For entry (needs a trusted proxy that overwrites the header, as
   * deploy/edge does); `rightmost-untrusted`: the right-most entry not in TRUSTED_PROXIES, for
   * chains of proxies that append to the header.
   */
  FORWARDED_FOR_MODE: z.enum(['first', 'rightmost-untrusted']).default('first'),
  /** Origins allowed by CORS, comma-separated; '*' for any; empty for none. */
  CORS_ORIGINS: env.list(),
  /** A rate check that Redis does not answer in time falls back to the per-process windows. */
  REDIS_TIMEOUT_MS: env.int(100),
});

export type GatewayConfig = z.output<typeof GatewayConfig>;
