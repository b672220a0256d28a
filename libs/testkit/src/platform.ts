import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { type Backing, liveKitEnv } from './backing.ts';
import { buildBundles, bundlePath, NODE_FLAGS } from './build.ts';
import { hasExited, stopChild } from './child-process.ts';
import { minioUrl } from './minio.ts';

import { SERVICES, type ServiceProcess } from './processes.ts';

export { SERVICES, type ServiceProcess };

export const DEFAULT_PORTS: Record<ServiceProcess, number> = {
  gateway: 8080,
  auth: 3001,
  guilds: 3002,
  social: 3003,
  media: 3004,
  music: 3005,
};

const ROOT = new URL('../../../', import.meta.url).pathname;

export interface PlatformOptions {
  backing: Backing;
  ports: Record<ServiceProcess, number>;
  /** Each process's metrics port; default PORT + 1000 (the kit's default). */
  metricsPorts?: Record<ServiceProcess, number>;
  /** The database URL of each service. */
  databases: Record<(typeof SERVICES)[number], string>;
  namespace: string;
  logDir: string;
  /** Inherited by every process (PATH and HOME at least); per-process values win over it. */
  baseEnv: Record<string, string | undefined>;
  /** Extra variables per process (tests: a short token lifetime, trusted proxies...). */
  extraEnv?: Partial<Record<ServiceProcess, Record<string, string>>>;
}

/** A process started next to the platform's own: its URL, and a stop that sends `signal` (SIGKILL to play a replica dying). */
export interface Replica {
  url: string;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

export interface Platform {
  urls: Record<ServiceProcess, string>;
  /** Where each process serves GET /metrics. */
  metricsUrls: Record<ServiceProcess, string>;
  logFile(name: ServiceProcess): string;
  /** The process id of a running process (the bench reads its memory and CPU time). */
  pid(name: ServiceProcess): number | undefined;
  stopService(name: ServiceProcess, signal?: NodeJS.Signals): Promise<number | null>;
  /** Sends a signal and returns at once (SIGSTOP and SIGCONT freeze and thaw a process). */
  signalService(name: ServiceProcess, signal: NodeJS.Signals): void;
  startService(name: ServiceProcess): Promise<void>;
  /**
   * One more process of `name` on `port`, with the same settings as the first (a second replica)
   * and `env` on top of them (a gateway replica pointed at other replicas of the services).
   */
  startReplica(name: ServiceProcess, port: number, env?: Record<string, string>): Promise<Replica>;
  /** One more gateway process on `port`, with the same settings as the first (a second replica). */
  startGatewayReplica(port: number): Promise<Replica>;
  stop(): Promise<void>;
  /**
   * Stops after a Ctrl-C: a terminal sends SIGINT to its whole process group, the processes too,
   * and a SIGTERM on top would be their second signal, which cuts their shutdown short. So each
   * gets up to `graceMs` to stop on its own first; only those still running are then told. The
   * default is a process's own bound (SHUTDOWN_GRACE_MS, 10 s) and a margin: a stopping process
   * keeps idle connections open for the kit's IDLE_DRAIN_MS, so it often takes a few seconds.
   */
  stopAfterInterrupt(graceMs?: number): Promise<void>;
}

/** The environment of each process, from where the backing parts and the other processes are. */
export function processEnv(name: ServiceProcess, o: PlatformOptions): Record<string, string> {
  const url = (p: ServiceProcess) => `http://127.0.0.1:${o.ports[p]}`;
  const common = {
    HOST: '127.0.0.1',
    PORT: String(o.ports[name]),
    ...(o.metricsPorts ? { METRICS_PORT: String(o.metricsPorts[name]) } : {}),
    NATS_URL: o.backing.natsUrl,
    BUS_NAMESPACE: o.namespace,
    AUTH_JWKS_URL: `${url('auth')}/v1/auth/jwks`,
  };
  const own: Record<ServiceProcess, Record<string, string>> = {
    gateway: {
      REDIS_URL: o.backing.redisUrl,
      AUTH_URL: url('auth'),
      GUILDS_URL: url('guilds'),
      SOCIAL_URL: url('social'),
      MEDIA_URL: url('media'),
      MUSIC_URL: url('music'),
    },
    auth: { DATABASE_URL: o.databases.auth },
    guilds: { DATABASE_URL: o.databases.guilds, ...liveKitEnv(o.backing.livekit) },
    social: { DATABASE_URL: o.databases.social, ...liveKitEnv(o.backing.livekit) },
    media: {
      DATABASE_URL: o.databases.media,
      MINIO_URL: minioUrl(o.backing.minio),
      MEDIA_PUBLIC_URL: url('gateway'),
    },
    music: { DATABASE_URL: o.databases.music },
  };
  return { ...common, ...own[name], ...(o.extraEnv?.[name] ?? {}) };
}

/**
 * Builds the bundles (the JavaScript each process runs, as in production), starts the five services
 * and the gateway, each as its own process, and waits until all are ready.
 */
export async function startPlatform(o: PlatformOptions, readyTimeoutMs = 90_000): Promise<Platform> {
  mkdirSync(o.logDir, { recursive: true });
  await buildBundles();
  const children = new Map<ServiceProcess, ChildProcess>();
  const urls = Object.fromEntries(Object.entries(o.ports).map(([n, p]) => [n, `http://127.0.0.1:${p}`])) as Record<ServiceProcess, string>;
  const metricsUrls = Object.fromEntries(
    Object.entries(o.ports).map(([n, p]) => [n, `http://127.0.0.1:${o.metricsPorts?.[n as ServiceProcess] ?? p + 1000}/metrics`]),
  ) as Record<ServiceProcess, string>;
  const logFile = (name: ServiceProcess) => join(o.logDir, `${name}.log`);

  function spawnProcess(name: ServiceProcess, env: Record<string, string>, logPath: string): ChildProcess {
    const log = createWriteStream(logPath, { flags: 'a' });
    const child = spawn(process.execPath, [...NODE_FLAGS[name], bundlePath(name)], {
      cwd: ROOT,
      env: { ...o.baseEnv, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout?.pipe(log);
    child.stderr?.pipe(log);
    return child;
  }

  async function startService(name: ServiceProcess) {
    const child = spawnProcess(name, processEnv(name, o), logFile(name));
    children.set(name, child);
    await waitFor(`${urls[name]}/health/live`, readyTimeoutMs, child, name, logFile(name));
  }

  const replicas = new Set<ChildProcess>();
  async function startReplica(name: ServiceProcess, port: number, env: Record<string, string> = {}): Promise<Replica> {
    const logPath = join(o.logDir, `${name}-${port}.log`);
    // A metrics port of its own: the first process holds the platform's.
    const child = spawnProcess(name, { ...processEnv(name, o), PORT: String(port), METRICS_PORT: '0', ...env }, logPath);
    replicas.add(child);
    const url = `http://127.0.0.1:${port}`;
    await waitFor(`${url}/health/live`, readyTimeoutMs, child, `${name} replica`, logPath);
    return {
      url,
      stop: async (signal: NodeJS.Signals = 'SIGTERM') => {
        replicas.delete(child);
        return stopChild(child, signal);
      },
    };
  }

  async function stopService(name: ServiceProcess, signal: NodeJS.Signals = 'SIGTERM') {
    const child = children.get(name);
    if (!child) return null;
    const code = await stopChild(child, signal);
    children.delete(name);
    return code;
  }

  function signalService(name: ServiceProcess, signal: NodeJS.Signals) {
    const child = children.get(name);
    if (child && !hasExited(child)) child.kill(signal);
  }

  const allExited = async (graceMs: number) => {
    const running = [...children.values(), ...replicas].filter((c) => !hasExited(c));
    const timer = new Promise<void>((resolve) => setTimeout(resolve, graceMs).unref());
    await Promise.race([Promise.all(running.map((c) => new Promise((resolve) => c.once('exit', resolve)))), timer]);
  };
  const stop = async () => {
    // A frozen process would not hear SIGTERM.
    for (const name of children.keys()) signalService(name, 'SIGCONT');
    await Promise.all([...replicas].map((c) => stopChild(c, 'SIGTERM')));
    await Promise.all([...children.keys()].map((n) => stopService(n)));
  };
  try {
    await Promise.all(SERVICES.map(startService));
    await startService('gateway');
    await waitFor(`${urls.gateway}/v1/health`, readyTimeoutMs, children.get('gateway'), 'gateway', logFile('gateway'));
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    urls,
    metricsUrls,
    logFile,
    pid: (name) => children.get(name)?.pid,
    stopService,
    startService,
    signalService,
    startReplica,
    startGatewayReplica: (port) => startReplica('gateway', port),
    stop,
    async stopAfterInterrupt(graceMs = 12_000) {
      await allExited(graceMs);
      await stop();
    },
  };
}

async function waitFor(url: string, timeoutMs: number, child: ChildProcess | undefined, name: string, logFile: string) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child && hasExited(child)) throw new Error(`${name} exited (${child.exitCode ?? child.signalCode}); see ${logFile}`);
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(1_000) });
      if (res.ok) return;
    } catch {}
    await new Promise((r) => setTimeout(r, 150));
  }
  throw new Error(`${name} was not ready at ${url} within ${timeoutMs} ms; see ${logFile}`);
}
