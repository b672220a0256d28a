import { existsSync } from 'node:fs';

/** Where the tests find PostgreSQL, Redis, NATS, MinIO and LiveKit. */
export interface Backing {
  /** A superuser URL; each test file creates its own database through it. */
  postgresUrl: string;
  redisUrl: string;
  natsUrl: string;
  minio: { endPoint: string; port: number; useSSL: boolean; accessKey: string; secretKey: string };
  livekit: LiveKit;
}

/** A LiveKit server and the key pair it trusts. */
export interface LiveKit {
  url: string;
  apiKey: string;
  apiSecret: string;
}

export interface ResolvedBacking {
  backing: Backing;
  source: 'environment' | 'testcontainers' | 'local';
  stop(): Promise<void>;
}

const LOCAL: Backing = {
  postgresUrl: 'postgres://postgres@127.0.0.1:5432/postgres',
  redisUrl: 'redis://127.0.0.1:6379',
  natsUrl: 'nats://127.0.0.1:4222',
  minio: { endPoint: '127.0.0.1', port: 9000, useSSL: false, accessKey: 'minioadmin', secretKey: 'minioadmin' },
  // `livekit-server --dev`, as scripts/backing.sh starts it.
  livekit: { url: 'ws://127.0.0.1:7880', apiKey: 'devkey', apiSecret: 'secret' },
};

/** Parses `ws://KEY:SECRET@host:port` into a LiveKit's url and key pair. */
export function parseLiveKitUrl(url: string): LiveKit {
  const u = new URL(url);
  const apiKey = decodeURIComponent(u.username);
  const apiSecret = decodeURIComponent(u.password);
  u.username = '';
  u.password = '';
  return { url: u.origin, apiKey, apiSecret };
}

/** The variables of a service that hands out media grants, for this LiveKit. */
export function liveKitEnv(livekit: LiveKit): Record<string, string> {
  return { LIVEKIT_URL: livekit.url, LIVEKIT_API_KEY: livekit.apiKey, LIVEKIT_API_SECRET: livekit.apiSecret };
}

/** Parses `http://KEY:SECRET@host:port` into the minio client's options. */
export function parseMinioUrl(url: string): Backing['minio'] {
  const u = new URL(url);
  return {
    endPoint: u.hostname,
    port: Number(u.port || (u.protocol === 'https:' ? 443 : 80)),
    useSSL: u.protocol === 'https:',
    accessKey: decodeURIComponent(u.username),
    secretKey: decodeURIComponent(u.password),
  };
}

/**
 * The backing parts, in order of preference: URLs from the environment (TEST_POSTGRES_URL,
 * TEST_REDIS_URL, TEST_NATS_URL, TEST_MINIO_URL, TEST_LIVEKIT_URL), containers when a Docker engine is reachable,
 * otherwise the local services that `scripts/backing.sh` starts.
 */
export async function resolveBacking(env: Record<string, string | undefined> = process.env): Promise<ResolvedBacking> {
  if (env.TEST_POSTGRES_URL || env.TEST_NATS_URL) {
    return {
      source: 'environment',
      stop: async () => {},
      backing: {
        postgresUrl: env.TEST_POSTGRES_URL ?? LOCAL.postgresUrl,
        redisUrl: env.TEST_REDIS_URL ?? LOCAL.redisUrl,
        natsUrl: env.TEST_NATS_URL ?? LOCAL.natsUrl,
        minio: env.TEST_MINIO_URL ? parseMinioUrl(env.TEST_MINIO_URL) : LOCAL.minio,
        livekit: env.TEST_LIVEKIT_URL ? parseLiveKitUrl(env.TEST_LIVEKIT_URL) : LOCAL.livekit,
      },
    };
  }
  if (env.TEST_USE_LOCAL !== '1' && dockerAvailable(env)) return startContainers();
  return { source: 'local', backing: LOCAL, stop: async () => {} };
}

function dockerAvailable(env: Record<string, string | undefined>): boolean {
  return Boolean(env.DOCKER_HOST) || existsSync('/var/run/docker.sock');
}

async function startContainers(): Promise<ResolvedBacking> {
  const { GenericContainer, Wait } = await import('testcontainers');
  const { PostgreSqlContainer } = await import('@testcontainers/postgresql');
  const { RedisContainer } = await import('@testcontainers/redis');
  const { MinioContainer } = await import('@testcontainers/minio');
  const [pg, redis, nats, minio, livekit] = await Promise.all([
    new PostgreSqlContainer('postgres:16-alpine').withUsername('postgres').withPassword('postgres').start(),
    new RedisContainer('redis:7-alpine').start(),
    new GenericContainer('nats:2.10-alpine')
      .withCommand(['-js'])
      .withExposedPorts(4222)
      .withWaitStrategy(Wait.forLogMessage(/Server is ready/))
      .start(),
    new MinioContainer('minio/minio:latest').start(),
    new GenericContainer('livekit/livekit-server:v1.13.5')
      .withCommand(['--dev', '--bind', '0.0.0.0'])
      .withExposedPorts(7880)
      .withWaitStrategy(Wait.forListeningPorts())
      .start(),
  ]);
  return {
    source: 'testcontainers',
    backing: {
      postgresUrl: `postgres://postgres:postgres@${pg.getHost()}:${pg.getPort()}/postgres`,
      redisUrl: `redis://${redis.getHost()}:${redis.getPort()}`,
      natsUrl: `nats://${nats.getHost()}:${nats.getMappedPort(4222)}`,
      minio: {
        endPoint: minio.getHost(),
        port: minio.getPort(),
        useSSL: false,
        accessKey: minio.getUsername(),
        secretKey: minio.getPassword(),
      },
      livekit: { url: `ws://${livekit.getHost()}:${livekit.getMappedPort(7880)}`, apiKey: 'devkey', apiSecret: 'secret' },
    },
    stop: async () => {
      await Promise.all([pg.stop(), redis.stop(), nats.stop(), minio.stop(), livekit.stop()]);
    },
  };
}
