import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { type IsolatedPlatform, type NatsCluster, startIsolatedPlatform, startNatsCluster, until } from '@chat/testkit';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { exerciseFaults, type Fault } from './suite.ts';

/**
 * The bus itself under a fault: a private three-node JetStream cluster (nats-server v2.15 built
 * from its Go module by scripts/backing.sh on first use) on free ports, every stream with a replica
 * on each node (as production declares them), the platform's processes given all three URLs. Under
 * the ledger's load, kill -9 of the node that leads the GUILDS stream, then of the one leading
 * SOCIAL (a follower by then, or the new leader), each started again on its own store after the
 * fault. PostgreSQL and Redis are the shared ones, untouched; the cluster dies with the run.
 * In `npm run test:faults` only (vitest.config.ts): the default suite stays fast.
 */
const backing = inject('backing');
const LOG_DIR = process.env.FAULTS_LOG_DIR ? join(process.env.FAULTS_LOG_DIR, 'cluster') : undefined;

let cluster: NatsCluster;
let run: IsolatedPlatform;

beforeAll(async () => {
  const binary = execFileSync('bash', [new URL('../../scripts/backing.sh', import.meta.url).pathname, 'nats-server'], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  }).trim();
  cluster = await startNatsCluster({ binary, size: 3, ...(LOG_DIR ? { logDir: LOG_DIR } : {}) });
  run = await startIsolatedPlatform({
    backing: { ...backing, natsUrl: cluster.url },
    label: 'faults_cluster',
    baseEnv: { PATH: process.env.PATH, HOME: process.env.HOME, NODE_ENV: 'test', LOG_LEVEL: 'warn' },
    extraEnv: {
      gateway: { TRUSTED_PROXIES: '127.0.0.1,::1', UPSTREAM_TIMEOUT_MS: '3000' },
      auth: { EMAIL_VERIFICATION: 'false' },
    },
    prepareBus: (namespace) => cluster.createStreams(namespace),
    ...(LOG_DIR ? { logDir: LOG_DIR } : {}),
  });
}, 300_000);

afterAll(async () => {
  await run?.stop();
  await cluster?.stop();
});

/** kill -9 of whichever node leads `stream` when the fault starts; the same node starts again at its end. */
function killLeaderOf(stream: 'GUILDS' | 'SOCIAL', time = ''): Fault {
  let victim = '';
  return {
    name: `kill -9 the ${stream} leader${time}`,
    async inject() {
      const name = `${run.namespace}_${stream}`;
      victim = await cluster.leaderOf(name);
      expect(cluster.nodes.map((n) => n.name)).toContain(victim);
      await cluster.kill(victim);
      // The two survivors elect a new leader while the load goes on.
      await until(async () => ![victim, ''].includes(await cluster.leaderOf(name)), {
        timeoutMs: 15_000,
        what: `${stream} has a new leader`,
      });
      process.stdout.write(`cluster fault: killed ${victim}, which led ${stream}; ${await cluster.leaderOf(name)} leads it now\n`);
    },
    heal: () => cluster.start(victim),
    lastsMs: 4_000,
  };
}

describe('the platform when a node of its JetStream cluster dies', () => {
  it('loses no acknowledged write, doubles none, publishes each event once, and is healthy again within 20 s', async () => {
    for (const stream of ['GUILDS', 'SOCIAL']) {
      expect((await cluster.leaderOf(`${run.namespace}_${stream}`)).length, `${stream} has a leader`).toBeGreaterThan(0);
    }
    const faults = [killLeaderOf('GUILDS'), killLeaderOf('SOCIAL'), killLeaderOf('GUILDS', ' again')];
    await exerciseFaults({ run, natsUrl: cluster.url, title: 'three-node JetStream cluster', clients: 8 }, faults);
  }, 600_000);
});
