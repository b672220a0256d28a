import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { STREAMS } from '@chat/contracts';
import { connectBus, createLogger, streamConfig } from '@chat/kit';
import { stopChild } from './child-process.ts';
import { freePort } from './isolated-platform.ts';
import { until } from './poll.ts';

export interface NatsNode {
  /** The server's name (`-n`), which JetStream reports as a stream's leader. */
  name: string;
  port: number;
  clusterPort: number;
  url: string;
}

/** A private JetStream cluster of nats-server processes on free ports of 127.0.0.1. */
export interface NatsCluster {
  nodes: NatsNode[];
  /** Every node's client URL, comma-separated: what NATS_URL takes. */
  url: string;
  /** kill -9 of one node: no lame-duck mode, no goodbye to its peers. */
  kill(name: string): Promise<void>;
  /** Starts a killed node again on its ports and store, and waits until it answers. */
  start(name: string): Promise<void>;
  /** The name of the node that leads a stream's replicas now ('' while there is none). */
  leaderOf(stream: string): Promise<string>;
  /** True when the stream has a leader and every other replica is current (caught up). */
  replicasCurrent(stream: string): Promise<boolean>;
  /** Creates every stream of the platform under `namespace` with one replica per node. */
  createStreams(namespace: string): Promise<void>;
  /** Kills every node and removes their stores. */
  stop(): Promise<void>;
}

const log = createLogger({ service: 'nats-cluster', level: 'silent' });

/**
 * Starts `size` nats-server processes (`binary`, a version with JetStream clustering) routed to
 * each other as one cluster, each with its own store under a temporary directory, and waits until
 * JetStream answers through every node. Nothing outlives stop(), nor the test process.
 */
export async function startNatsCluster(options: { binary: string; size?: number; logDir?: string }): Promise<NatsCluster> {
  const size = options.size ?? 3;
  const dir = await mkdtemp(join(tmpdir(), 'chat-nats-cluster-'));
  const logDir = options.logDir ?? dir;
  await mkdir(logDir, { recursive: true });
  const nodes: NatsNode[] = [];
  for (let i = 0; i < size; i++) {
    const [port, clusterPort] = [await freePort(), await freePort()];
    nodes.push({ name: `node-${i + 1}`, port, clusterPort, url: `nats://127.0.0.1:${port}` });
  }
  const routes = nodes.map((n) => `nats-route://127.0.0.1:${n.clusterPort}`).join(',');
  const processes = new Map<string, ChildProcess>();
  const killAll = () => {
    for (const child of processes.values()) child.kill('SIGKILL');
  };
  process.once('exit', killAll);

  async function start(name: string): Promise<void> {
    const node = nodes.find((n) => n.name === name);
    if (!node) throw new Error(`no node ${name}`);
    const args = ['-a', '127.0.0.1', '-p', String(node.port), '-n', node.name, '-js', '-sd', join(dir, node.name)];
    args.push('--cluster_name', 'chat-faults', '--cluster', `nats://127.0.0.1:${node.clusterPort}`, '--routes', routes);
    const child = spawn(options.binary, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const out = createWriteStream(join(logDir, `${node.name}.log`), { flags: 'a' });
    child.stdout?.pipe(out);
    child.stderr?.pipe(out);
    processes.set(name, child);
    await until(() => portAnswers(node.port), { timeoutMs: 20_000, what: `${node.name} answers on ${node.port}` });
  }

  async function withBus<T>(use: (bus: Awaited<ReturnType<typeof connectBus>>) => Promise<T>, namespace = ''): Promise<T> {
    const bus = await connectBus({ url: nodes.map((n) => n.url).join(','), namespace, name: 'nats-cluster', log });
    try {
      return await use(bus);
    } finally {
      await bus.close();
    }
  }

  const cluster: NatsCluster = {
    nodes,
    url: nodes.map((n) => n.url).join(','),
    async kill(name) {
      const child = processes.get(name);
      if (!child) return;
      await stopChild(child, 'SIGKILL');
      processes.delete(name);
    },
    start,
    leaderOf: (stream) => withBus(async (bus) => (await bus.jsm.streams.info(stream)).cluster?.leader ?? '').catch(() => ''),
    replicasCurrent: (stream) =>
      withBus(async (bus) => {
        const { cluster: state } = await bus.jsm.streams.info(stream);
        const replicas = state?.replicas ?? [];
        return Boolean(state?.leader) && replicas.length === size - 1 && replicas.every((r) => r.current && !r.offline);
      }).catch(() => false),
    createStreams: (namespace) =>
      withBus(async (bus) => {
        // As the platform's own ensureStream, with a replica on every node (as NACK declares them in production).
        for (const spec of Object.values(STREAMS)) await bus.jsm.streams.add({ ...streamConfig(bus, spec), num_replicas: size });
      }, namespace),
    async stop() {
      await Promise.all(nodes.map((n) => cluster.kill(n.name)));
      process.off('exit', killAll);
      await rm(dir, { recursive: true, force: true });
    },
  };

  try {
    await Promise.all(nodes.map((n) => start(n.name)));
    // JetStream answers once the nodes have met and elected a meta leader.
    await until(
      () =>
        withBus(async (bus) => {
          await bus.jsm.getAccountInfo();
          return true;
        }).catch(() => false),
      { timeoutMs: 30_000, what: 'JetStream answers through the cluster' },
    );
  } catch (err) {
    await cluster.stop();
    throw err;
  }
  return cluster;
}

async function portAnswers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
