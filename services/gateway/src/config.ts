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
  BODY_LIMIT_BYTES: env.int(1024 * 1024, 1),
  /** Upstream answer deadline: a hung service answers 504 instead of hanging the client. */
  UPSTREAM_TIMEOUT_MS: env.int(30_000, 1),
  /** A request body (other than an upload) that pauses this long answers 408; it is read whole before it is forwarded. */
  BODY_IDLE_TIMEOUT_MS: env.int(10_000, 1),
  /**
   * An upload streams through, so it holds one of the pool's connections to the service while it
   * lasts: one that pauses for BODY_IDLE_TIMEOUT_MS, or falls behind this rate (after that much
   * time's grace), answers 408.
   */
  UPLOAD_MIN_BYTES_PER_SECOND: env.int(4_096, 1),
  /** Uploads of one user in flight through one gateway process; the next is 429 before the service is asked. */
  UPLOADS_IN_FLIGHT_PER_USER: env.int(10, 1),
  /** Uploads in flight through one gateway process (429 past it): keep it well below the pool's 128 connections to a service. */
  UPLOADS_IN_FLIGHT: env.int(64, 1),
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
  REDIS_TIMEOUT_MS: env.int(100, 1),
  /** The real-time socket: what `GET /v1/gateway` answers; by default ws://<Host>/v1/gateway/ws of the request. */
  GATEWAY_PUBLIC_URL: z.url().optional(),
  /** HELLO's heartbeatInterval (at least 1 s); a socket silent for 1.5 intervals closes with 4009. */
  GATEWAY_HEARTBEAT_INTERVAL_MS: env.int(41_250, 1_000),
  /** RESUME is accepted this long after a socket dropped. */
  GATEWAY_RESUME_WINDOW_MS: env.int(120_000, 1),
  /** Dispatches kept per session for RESUME (older ones make a resume impossible). */
  GATEWAY_REPLAY_BUFFER: env.int(1_000, 1),
  /** Frames a client may send per window before it is closed with 4008 (Discord: 120 per 60 s). */
  GATEWAY_FRAME_LIMIT: env.int(120, 1),
  GATEWAY_FRAME_WINDOW_MS: env.int(60_000, 1),
  /** IDENTIFYs per user per UTC day (Discord allows about 1,000). */
  GATEWAY_IDENTIFY_PER_DAY: env.int(1_000, 1),
  /**
   * Bytes a socket may leave unread in this process before it is closed with 4000 (it may RESUME):
   * a client that stops reading would otherwise hold every dispatch in the gateway's memory.
   */
  GATEWAY_MAX_BUFFERED_BYTES: env.int(4 * 1024 * 1024, 1),
  /**
   * The dispatch lease: one replica at a time reads the streams. Renewed every third of it; when its
   * holder dies, dispatches wait at most this long (plus a third) for another replica to take over.
   */
  GATEWAY_DISPATCH_LEASE_MS: env.int(5_000, 1),
});

export type GatewayConfig = z.output<typeof GatewayConfig>;
