import { existsSync } from 'node:fs';

/** Where the tests find PostgreSQL, Redis, NATS and MinIO. */
export interface Backing {
  /** A superuser URL; each test file creates its own database through it. */
  postgresUrl: string;
  redisUrl: string;
  natsUrl: string;
  minio: { endPoint: string; port: number; useSSL: boolean; accessKey: string; secretKey: string };
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
};

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
 * TEST_REDIS_URL, TEST_NATS_URL, TEST_MINIO_URL), containers when a Docker engine is reachable,
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
  const [pg, redis, nats, minio] = await Promise.all([
    new PostgreSqlContainer('postgres:16-alpine').withUsername('postgres').withPassword('postgres').start(),
    new RedisContainer('redis:7-alpine').start(),
    new GenericContainer('nats:2.10-alpine')
      .withCommand(['-js'])
      .withExposedPorts(4222)
      .withWaitStrategy(Wait.forLogMessage(/Server is ready/))
      .start(),
    new MinioContainer('minio/minio:latest').start(),
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
    },
    stop: async () => {
      await Promise.all([pg.stop(), redis.stop(), nats.stop(), minio.stop()]);
    },
  };
}
