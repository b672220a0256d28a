import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { baseConfig, ConfigError, databaseConfig, env, loadConfig } from '../src/config.ts';

const ServiceConfig = baseConfig.extend(databaseConfig.shape).extend({ PORT: env.port(3000), VERBOSE: env.bool(false), PEERS: env.list() });

function configError(run: () => unknown): ConfigError {
  try {
    run();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig', () => {
  it('parses a good environment with its defaults and conversions', () => {
    const config = loadConfig(ServiceConfig, { DATABASE_URL: 'postgres://db/x', PORT: '4000', VERBOSE: '1', PEERS: 'a, b,,c' });
    expect(config).toMatchObject({ PORT: 4000, VERBOSE: true, PEERS: ['a', 'b', 'c'], LOG_LEVEL: 'info', DATABASE_POOL_SIZE: 10 });
  });

  it('keeps events 7 days by default and refuses less than a day', () => {
    expect(loadConfig(ServiceConfig, { DATABASE_URL: 'postgres://db/x' }).EVENT_RETENTION_DAYS).toBe(7);
    expect(loadConfig(ServiceConfig, { DATABASE_URL: 'postgres://db/x', EVENT_RETENTION_DAYS: '30' }).EVENT_RETENTION_DAYS).toBe(30);
    for (const bad of ['0', '0.5', 'week']) {
      const err = configError(() => loadConfig(ServiceConfig, { DATABASE_URL: 'postgres://db/x', EVENT_RETENTION_DAYS: bad }));
      expect(err.problems.map((p) => p.split(':')[0])).toEqual(['EVENT_RETENTION_DAYS']);
    }
  });

  it('names every missing and bad variable in one message', () => {
    const err = configError(() =>
      loadConfig(ServiceConfig, { PORT: 'abc', LOG_LEVEL: 'loud', BUS_NAMESPACE: 'Has Spaces', VERBOSE: 'yes' }),
    );
    const names = err.problems.map((p) => p.split(':')[0]);
    expect(names.sort()).toEqual(['BUS_NAMESPACE', 'DATABASE_URL', 'LOG_LEVEL', 'PORT', 'VERBOSE']);
    expect(err.problems.find((p) => p.startsWith('DATABASE_URL'))).toMatch(/^DATABASE_URL: missing/);
    for (const name of names) expect(err.message).toContain(`  - ${name}: `);
  });

  it('rejects an out-of-range port and a URL of the wrong kind', () => {
    const err = configError(() => loadConfig(ServiceConfig, { PORT: '70000', DATABASE_URL: 'mysql://db/x' }));
    expect(err.problems).toHaveLength(2);
    expect(err.message).toMatch(/PORT: /);
    expect(err.message).toMatch(/DATABASE_URL: must be a postgres:\/\/ URL/);
  });

  it('never repeats the value of a bad variable (it may be a secret)', () => {
    const err = configError(() => loadConfig(z.object({ API_SECRET: z.string().min(32) }), { API_SECRET: 'short-secret-value' }));
    expect(err.message).toContain('API_SECRET');
    expect(err.message).not.toContain('short-secret-value');
  });

  it('treats an empty variable as unset, so the default applies', () => {
    const config = loadConfig(ServiceConfig, { DATABASE_URL: 'postgres://db/x', PORT: '', DATABASE_POOL_SIZE: '' });
    expect(config.PORT).toBe(3000);
    expect(config.DATABASE_POOL_SIZE).toBe(10);
  });
});

describe('number settings and NATS_URL', () => {
  const base = { DATABASE_URL: 'postgres://db/x' };
  const problemsOf = (extra: Record<string, string>) =>
    configError(() => loadConfig(ServiceConfig, { ...base, ...extra })).problems.map((p) => p.split(':')[0]);

  it('refuses a negative number in any setting, and 0 where a setting asks for at least 1', () => {
    const Limits = z.object({ COUNT: env.int(5), TIMEOUT_MS: env.int(1_000, 1) });
    expect(loadConfig(Limits, { COUNT: '0', TIMEOUT_MS: '1' })).toEqual({ COUNT: 0, TIMEOUT_MS: 1 });
    const err = configError(() => loadConfig(Limits, { COUNT: '-1', TIMEOUT_MS: '0' }));
    expect(err.problems.map((p) => p.split(':')[0]).sort()).toEqual(['COUNT', 'TIMEOUT_MS']);
    expect(problemsOf({ SHUTDOWN_GRACE_MS: '0', DATABASE_POOL_SIZE: '0' }).sort()).toEqual(['DATABASE_POOL_SIZE', 'SHUTDOWN_GRACE_MS']);
  });

  it('takes NATS_URL as one or more nats:// or tls:// URLs or host:port, and refuses anything else by name', () => {
    for (const good of [
      'nats://127.0.0.1:4222',
      'tls://u:p@nats.internal:4222',
      'nats-1:4222, nats-2:4222,nats://nats-3',
      'localhost',
      '[::1]:4222',
    ]) {
      expect(loadConfig(ServiceConfig, { ...base, NATS_URL: good }).NATS_URL, good).toBe(good);
    }
    for (const bad of ['not a url at all', 'http://nats:4222', 'nats://', 'nats://a:4222,,', 'nats://a:4222;b']) {
      expect(problemsOf({ NATS_URL: bad }), bad).toEqual(['NATS_URL']);
    }
  });
});
