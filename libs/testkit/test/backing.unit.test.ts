import { describe, expect, it } from 'vitest';
import { parseMinioUrl, resolveBacking } from '../src/backing.ts';
import { testNamespace } from '../src/database.ts';
import { DEFAULT_PORTS, processEnv, SERVICES } from '../src/platform.ts';

describe('resolveBacking', () => {
  it('takes the backing parts from the environment first', async () => {
    const resolved = await resolveBacking({
      TEST_POSTGRES_URL: 'postgres://u@db:6543/postgres',
      TEST_NATS_URL: 'nats://bus:4333',
      TEST_REDIS_URL: 'redis://cache:6380',
      TEST_MINIO_URL: 'https://key%2Fid:s3cr%40t@files:9443',
      TEST_LIVEKIT_URL: 'wss://lk%2Fkey:se%40cret@media:7443',
    });
    expect(resolved.source).toBe('environment');
    expect(resolved.backing).toEqual({
      postgresUrl: 'postgres://u@db:6543/postgres',
      natsUrl: 'nats://bus:4333',
      redisUrl: 'redis://cache:6380',
      minio: { endPoint: 'files', port: 9443, useSSL: true, accessKey: 'key/id', secretKey: 's3cr@t' },
      livekit: { url: 'wss://media:7443', apiKey: 'lk/key', apiSecret: 'se@cret' },
    });
  });

  it('uses the local services when told to, even with a Docker engine around', async () => {
    const resolved = await resolveBacking({ TEST_USE_LOCAL: '1', DOCKER_HOST: 'unix:///nowhere' });
    expect(resolved.source).toBe('local');
    expect(resolved.backing.postgresUrl).toBe('postgres://postgres@127.0.0.1:5432/postgres');
  });
});

describe('parseMinioUrl', () => {
  it('defaults the port by scheme', () => {
    expect(parseMinioUrl('http://a:b@host')).toMatchObject({ port: 80, useSSL: false, accessKey: 'a', secretKey: 'b' });
  });
});

describe('testNamespace', () => {
  it('gives distinct names that BUS_NAMESPACE accepts', () => {
    const a = testNamespace('Guilds-Service');
    const b = testNamespace('Guilds-Service');
    expect(a).not.toBe(b);
    expect(a).toMatch(/^[a-z0-9]+$/);
  });
});

describe('processEnv', () => {
  const options = {
    backing: {
      postgresUrl: 'postgres://postgres@127.0.0.1:5432/postgres',
      redisUrl: 'redis://127.0.0.1:6379',
      natsUrl: 'nats://127.0.0.1:4222',
      minio: { endPoint: '127.0.0.1', port: 9000, useSSL: false, accessKey: 'min io', secretKey: 'p@ss' },
      livekit: { url: 'ws://127.0.0.1:7880', apiKey: 'lk', apiSecret: 'lk-secret' },
    },
    ports: DEFAULT_PORTS,
    databases: Object.fromEntries(SERVICES.map((s) => [s, `postgres://postgres@127.0.0.1:5432/${s}_db`])) as Record<
      (typeof SERVICES)[number],
      string
    >,
    namespace: 'tns1',
    logDir: '/tmp/logs',
    baseEnv: {},
    extraEnv: { auth: { ACCESS_TOKEN_TTL_SECONDS: '5' } },
  };

  it('gives each service its own database, the shared bus namespace and its own port', () => {
    for (const service of SERVICES) {
      const env = processEnv(service, options);
      expect(env.DATABASE_URL).toBe(`postgres://postgres@127.0.0.1:5432/${service}_db`);
      expect(env.BUS_NAMESPACE).toBe('tns1');
      expect(env.PORT).toBe(String(DEFAULT_PORTS[service]));
    }
    expect(processEnv('auth', options).ACCESS_TOKEN_TTL_SECONDS).toBe('5');
    expect(processEnv('media', options).MINIO_URL).toBe('http://min%20io:p%40ss@127.0.0.1:9000');
    expect(processEnv('gateway', options)).toMatchObject({ GUILDS_URL: 'http://127.0.0.1:3002', REDIS_URL: 'redis://127.0.0.1:6379' });
    // The two services that hand out media grants and manage the rooms, and no other.
    const livekit = { LIVEKIT_URL: 'ws://127.0.0.1:7880', LIVEKIT_API_KEY: 'lk', LIVEKIT_API_SECRET: 'lk-secret' };
    for (const service of SERVICES) {
      const env = processEnv(service, options);
      if (service === 'guilds' || service === 'social') expect(env).toMatchObject(livekit);
      else expect(env.LIVEKIT_URL).toBeUndefined();
    }
  });
});
