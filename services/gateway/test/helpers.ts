import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { connect } from 'node:net';
import { type RouteContract, STREAMS } from '@chat/contracts';
import {
  type Bus,
  connectBus,
  createLogger,
  createTokenVerifier,
  ensureStream,
  loadConfig,
  optionalCheck,
  revocationRetentionMs,
  watchRevocations,
} from '@chat/kit';
import { createTestIssuer, deleteNamespaceStreams, freePort, stopChild, TEST_AUDIENCE, TEST_ISSUER } from '@chat/testkit';
import Fastify, { type FastifyInstance } from 'fastify';
import { Redis as IORedis, type Redis } from 'ioredis';
import type { JWTVerifyGetKey } from 'jose';
import type { Logger } from 'pino';
import { afterAll, inject } from 'vitest';
import { buildApp } from '../src/app.ts';
import { GatewayConfig } from '../src/config.ts';
import { answerWithin, createRedis, redisReady } from '../src/db/redis.ts';
import { createRateLimiter, rateKeyPrefix } from '../src/domain/rate-limit.ts';
import { copyRevocationsToRedis } from '../src/domain/revocations.ts';

/** Stands in for every service: answers any request with what it received (the proxy is under test, not the services). */
export async function startEchoUpstream(name?: string): Promise<{ url: string; close(): Promise<void> }> {
  const echo = Fastify();
  echo.all('/*', async (req) => ({
    upstream: true,
    ...(name ? { name } : {}),
    method: req.method,
    url: req.url,
    authorization: req.headers.authorization ?? null,
  }));
  const url = await echo.listen({ port: 0, host: '127.0.0.1' });
  return { url, close: () => echo.close() };
}

export interface TestGateway {
  app: FastifyInstance;
  redis: Redis;
  close(): Promise<void>;
}

/**
 * A gateway app with real Redis windows under a namespace of its own, upstreams at `upstreamUrl`,
 * and tokens checked with `keys` (a URL or a key getter).
 */
export async function startGateway(options: {
  upstreamUrl: string;
  keys: string | JWTVerifyGetKey;
  env?: Record<string, string>;
  redisUrl?: string;
  namespace?: string;
  log?: Logger;
  /** The route contracts to route by (default: ALL_ROUTES). */
  routes?: RouteContract[];
  /** A bus to learn session revocations from, as main does (none: no revocation list in memory). */
  bus?: Bus;
}): Promise<TestGateway> {
  const upstreams = Object.fromEntries(['AUTH', 'GUILDS', 'SOCIAL', 'MEDIA', 'MUSIC'].map((s) => [`${s}_URL`, options.upstreamUrl]));
  const namespace = options.namespace ?? newNamespace();
  const config = loadConfig(GatewayConfig, {
    NODE_ENV: 'test',
    LOG_LEVEL: 'silent',
    BUS_NAMESPACE: namespace,
    ...upstreams,
    ...options.env,
  });
  const log = options.log ?? createLogger({ service: 'gateway', level: 'silent' });
  const redis = createRedis(options.redisUrl ?? inject('backing').redisUrl, 5_000);
  // As main does: the first requests should meet Redis, not the fallback (a dead URL just times out here).
  // On a loaded CI machine the shared Redis may take a while to connect: a test that counts windows
  // must not start on the fallback, so that case waits long and fails loudly.
  const ready = await redisReady(redis, options.redisUrl ? 300 : 15_000);
  if (!ready && !options.redisUrl) throw new Error('the shared Redis did not connect within 15 s');
  const limiter = createRateLimiter({ redis, keyPrefix: rateKeyPrefix(namespace), log, timeoutMs: config.REDIS_TIMEOUT_MS });
  const revocations = options.bus
    ? await watchRevocations({ bus: options.bus, log, retentionMs: revocationRetentionMs(config) })
    : undefined;
  if (revocations) copyRevocationsToRedis(revocations, limiter, log);
  const tokens = createTokenVerifier({ keys: options.keys, issuer: TEST_ISSUER, audience: TEST_AUDIENCE, algorithm: 'EdDSA', revocations });
  const app = await buildApp({
    config,
    log,
    tokens,
    limiter,
    routes: options.routes,
    checks: { redis: optionalCheck(() => answerWithin(redis.ping(), config.REDIS_TIMEOUT_MS)) },
  });
  await app.ready();
  return {
    app,
    redis,
    async close() {
      await app.close();
      await revocations?.stop();
      redis.disconnect();
    },
  };
}

export const newNamespace = () => `tgw${randomBytes(4).toString('hex')}`;
export { createTestIssuer, freePort };

/** A redis-server of this test's own, so that stopping it never disturbs anyone else's tests. */
export async function startOwnRedis(): Promise<{ url: string; stop(): Promise<void> }> {
  const port = await freePort();
  const child: ChildProcess = spawn(
    'redis-server',
    ['--port', String(port), '--save', '', '--appendonly', 'no', '--enable-debug-command', 'yes'],
    { stdio: 'ignore' },
  );
  const url = `redis://127.0.0.1:${port}`;
  const probe = createRedis(url, 500);
  for (let i = 0; i < 50 && probe.status !== 'ready'; i++) await new Promise((r) => setTimeout(r, 100));
  probe.disconnect();
  return {
    url,
    stop: async () => void (await stopChild(child, 'SIGKILL')),
  };
}

/**
 * A bus namespace of its own with the GUILDS stream, and a Redis connection, for the stream
 * readers' tests; both are removed after the file's tests.
 */
export async function streamReaderBacking(name: string) {
  const log = createLogger({ service: 'test', level: 'silent' });
  const namespace = newNamespace();
  const bus = await connectBus({ url: inject('backing').natsUrl, namespace, name, log });
  await ensureStream(bus, STREAMS.guilds);
  const redis = new IORedis(inject('backing').redisUrl);
  afterAll(async () => {
    await deleteNamespaceStreams(bus, namespace);
    await bus.nc.drain();
    redis.disconnect();
  });
  return { log, bus, redis };
}

/** A dispatcher's `account` for tests whose events never ask auth for an account. */
export const notAsked = async (): Promise<never> => {
  throw new Error('no account was to be asked for');
};

/**
 * Writes `parts` to a raw connection to `address` (http://host:port), `pauseMs` apart, and answers
 * everything read until the server closes it (or `waitMs`). Parts left when the server closed the
 * connection are not sent.
 */
export async function sendRaw(address: string, parts: string[], pauseMs = 0, waitMs = 3_000): Promise<string> {
  const { port, hostname } = new URL(address);
  const socket = connect(Number(port), hostname);
  let answer = '';
  socket.on('data', (chunk) => {
    answer += chunk.toString();
  });
  let open = true;
  const closed = new Promise<void>((resolve) =>
    socket.once('close', () => {
      open = false;
      resolve();
    }),
  );
  socket.on('error', () => {});
  for (const [i, part] of parts.entries()) {
    if (i > 0) await new Promise((resolve) => setTimeout(resolve, pauseMs));
    if (!open) break;
    socket.write(part);
  }
  await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, waitMs))]);
  socket.destroy();
  return answer;
}
