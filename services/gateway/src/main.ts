import {
  configOrExit,
  createLogger,
  daysToMs,
  natsCheck,
  openBus,
  optionalCheck,
  serve,
  startTokenVerifier,
  startTracing,
} from '@chat/kit';
import { buildApp } from './app.ts';
import { GatewayConfig } from './config.ts';
import { answerWithin, createRedis, redisReady } from './db/redis.ts';
import { createRateLimiter, rateKeyPrefix } from './domain/rate-limit.ts';
import { copyRevocationsToRedis } from './domain/revocations.ts';
import { startRealtime } from './realtime.ts';

const config = configOrExit(GatewayConfig, 'gateway');
const log = createLogger({ service: 'gateway', level: config.LOG_LEVEL });
startTracing({ service: 'gateway', endpoint: config.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT });
// HTTP needs neither the bus nor Redis: both connect in the background and only degrade the gateway.
const bus = openBus({
  url: config.NATS_URL,
  namespace: config.BUS_NAMESPACE,
  name: 'gateway',
  log,
  retentionMs: daysToMs(config.EVENT_RETENTION_DAYS),
});
const redis = createRedis(config.REDIS_URL, 5_000);
if (!(await redisReady(redis))) log.warn('Redis not reachable at start: rate limits use the per-process fallback until it is');
const limiter = createRateLimiter({ redis, keyPrefix: rateKeyPrefix(config.BUS_NAMESPACE), log, timeoutMs: config.REDIS_TIMEOUT_MS });
const { tokens, revocations } = await startTokenVerifier({ config, bus, log });
copyRevocationsToRedis(revocations, limiter, log);
// The socket's own connections: its commands may take longer than a rate check, and one listens.
const socketRedis = createRedis(config.REDIS_URL, 5_000, true);
const subscriber = createRedis(config.REDIS_URL, 5_000, true);
const realtime = await startRealtime({ config, log, bus, redis: socketRedis, subscriber, tokens, limiter, revocations });
const app = await buildApp({
  config,
  log,
  tokens,
  limiter,
  realtime,
  checks: { nats: optionalCheck(() => natsCheck(bus)), redis: optionalCheck(() => answerWithin(redis.ping(), config.REDIS_TIMEOUT_MS)) },
});
await serve({
  app,
  config,
  log,
  consumers: [revocations],
  onClose: async () => {
    await bus.close();
    redis.disconnect();
    socketRedis.disconnect();
    subscriber.disconnect();
  },
});
