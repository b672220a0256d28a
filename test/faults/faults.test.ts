import { join } from 'node:path';
import { type IsolatedPlatform, startIsolatedPlatform, startTcpProxy, type TcpProxy } from '@chat/testkit';
import { afterAll, beforeAll, describe, inject, it } from 'vitest';
import { exerciseFaults, type Fault } from './suite.ts';

/**
 * The fault suite: a platform of its own under bounded load (channel and direct messages, each
 * with an Idempotency-Key, retried on every unknown outcome), with faults injected only into what
 * this file owns: its processes (kill -9, SIGSTOP) and TCP proxies between them and PostgreSQL,
 * Redis and NATS (cut, stall). The shared backing parts are never touched. Afterwards the ledger
 * is checked against the databases and JetStream, and the counts are printed as a table.
 * `npm test` runs the short list; `npm run test:faults` (FAULTS_FULL=1) runs every fault, twice.
 */
const FULL = process.env.FAULTS_FULL === '1';
const backing = inject('backing');

let run: IsolatedPlatform;
const proxies: Record<'postgres' | 'redis' | 'nats', TcpProxy> = {} as never;

const hostPort = (url: string) => {
  const u = new URL(url);
  return { host: u.hostname, port: Number(u.port) };
};

beforeAll(async () => {
  proxies.postgres = await startTcpProxy(hostPort(backing.postgresUrl));
  proxies.redis = await startTcpProxy(hostPort(backing.redisUrl));
  proxies.nats = await startTcpProxy(hostPort(backing.natsUrl));
  const through = (url: string, proxy: TcpProxy) => {
    const u = new URL(url);
    u.hostname = '127.0.0.1';
    u.port = String(proxy.port);
    return u.toString().replace(/\/$/, '');
  };
  run = await startIsolatedPlatform({
    backing: {
      ...backing,
      postgresUrl: through(backing.postgresUrl, proxies.postgres),
      redisUrl: through(backing.redisUrl, proxies.redis),
      natsUrl: through(backing.natsUrl, proxies.nats),
    },
    label: 'faults',
    baseEnv: { PATH: process.env.PATH, HOME: process.env.HOME, NODE_ENV: 'test', LOG_LEVEL: 'warn' },
    extraEnv: {
      gateway: { TRUSTED_PROXIES: '127.0.0.1,::1', UPSTREAM_TIMEOUT_MS: '3000' },
      auth: { EMAIL_VERIFICATION: 'false' },
    },
    ...(process.env.FAULTS_LOG_DIR ? { logDir: join(process.env.FAULTS_LOG_DIR, 'faults') } : {}),
  });
}, 180_000);

afterAll(async () => {
  for (const proxy of Object.values(proxies)) proxy?.restore();
  await run?.stop();
  await Promise.all(Object.values(proxies).map((p) => p?.close()));
});

function faults(): Fault[] {
  const p = () => run.platform;
  const kill = (name: 'guilds' | 'social' | 'gateway'): Fault => ({
    name: `kill -9 ${name}`,
    inject: () =>
      p()
        .stopService(name, 'SIGKILL')
        .then(() => {}),
    heal: () => p().startService(name),
    lastsMs: 1_500,
  });
  const freeze = (name: 'guilds' | 'social' | 'gateway', ms: number): Fault => ({
    name: `SIGSTOP ${name} ${ms / 1000} s`,
    inject: () => p().signalService(name, 'SIGSTOP'),
    heal: () => p().signalService(name, 'SIGCONT'),
    lastsMs: ms,
  });
  const link = (part: keyof typeof proxies, how: 'cut' | 'stall', ms: number): Fault => ({
    name: `${part} link ${how} ${ms / 1000} s`,
    inject: () => proxies[part][how](),
    heal: () => proxies[part].restore(),
    lastsMs: ms,
  });
  const short = [kill('guilds'), freeze('social', 4_000), kill('gateway'), link('nats', 'cut', 3_000), link('postgres', 'cut', 2_000)];
  if (!FULL) return short;
  const all = [
    ...short,
    kill('social'),
    freeze('guilds', 4_000),
    freeze('gateway', 4_000),
    link('nats', 'stall', 5_000),
    link('redis', 'cut', 3_000),
    link('redis', 'stall', 3_000),
    link('postgres', 'stall', 3_000),
  ];
  return [...all, ...all];
}

describe('the platform under faults', () => {
  it(
    'loses no acknowledged write, doubles none, publishes each event once, and is healthy again within 20 s of each fault',
    async () => {
      await exerciseFaults({ run, natsUrl: backing.natsUrl, title: FULL ? 'full' : 'short', clients: FULL ? 12 : 6 }, faults());
    },
    FULL ? 900_000 : 240_000,
  );
});
