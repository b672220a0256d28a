import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join, resolve } from 'node:path';
import {
  type Backing,
  freePort,
  hasExited,
  removeBucket,
  resolveBacking,
  SERVICES,
  type ServiceProcess,
  startIsolatedPlatform,
  stopChild,
} from '@chat/testkit';
import { Client } from 'minio';

export interface Running<T> {
  value: T;
  stop(): Promise<void>;
}

export interface BenchPlatform {
  urls: Record<ServiceProcess, string>;
  logDir: string;
  /** Where the platform's backing parts are (references measure against the same ones). */
  backing: Backing;
  /** Each service's database: a scenario may seed a large corpus straight into it (search); the CPU probe finds their PostgreSQL backends by name. */
  databases: Record<Exclude<ServiceProcess, 'gateway'>, string>;
  /** The gateway's process id: the socket bench reads its memory and CPU time. */
  gatewayPid: number;
  /** Every process's id: the CPU probe (cpu.ts) reads each one's CPU time. */
  pids: Record<ServiceProcess, number>;
}

/**
 * Every service and the gateway as their own processes, on free ports, with fresh databases and a
 * bus namespace of their own (as the end-to-end tests do), so a bench never touches a developer's
 * data or files. The gateway trusts 127.0.0.1, so the bench can name its client IPs (see
 * client-ips.ts), and registration answers with a token at once (no email verification).
 */
export async function startBenchPlatform(settings: {
  nodeEnv: string;
  logLevel: string;
  /** A label of its own when a run starts two platforms (its databases and bus namespace differ). */
  label?: string;
  /** Variables given to every process (the traced platform's OTLP endpoint). */
  env?: Record<string, string>;
  /** When set, every platform process writes a V8 CPU profile into `<profileDir>/<process>/` as it exits. */
  profileDir?: string;
  /** When set, every service's DATABASE_POOL_SIZE (to choose it by measurement); the services' default otherwise. */
  databasePoolSize?: number | undefined;
}): Promise<Running<BenchPlatform>> {
  const resolved = await resolveBacking();
  // Uploads go to a bucket of the run's own (media creates it), removed with everything in it.
  const bucket = `bench-${randomBytes(5).toString('hex')}`;
  const cleanUp = async () => {
    await removeBucket(new Client(resolved.backing.minio), bucket).catch(() => {});
    await resolved.stop();
  };
  try {
    const run = await startIsolatedPlatform({
      backing: resolved.backing,
      label: settings.label ?? 'bench',
      baseEnv: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        NODE_ENV: settings.nodeEnv,
        LOG_LEVEL: settings.logLevel,
        ...settings.env,
      },
      extraEnv: withProfiles(
        settings.profileDir,
        withPoolSize(settings.databasePoolSize, {
          // A replay buffer of 100 per session: the socket benches put hundreds of posts into a thousand sessions of a shared Redis.
          gateway: { TRUSTED_PROXIES: '127.0.0.1', GATEWAY_REPLAY_BUFFER: '100' },
          auth: { EMAIL_VERIFICATION: 'false' },
          // One bench user uploads gigabytes in seconds: the per-user upload quotas would measure themselves.
          media: { MEDIA_BUCKET: bucket, MEDIA_QUOTA_FILES_PER_HOUR: '100000000', MEDIA_QUOTA_BYTES_PER_DAY: String(2 ** 50) },
          // A bundle-claim caller fetches hundreds of times a second: its per-caller window would
          // otherwise measure the 429 path.
          social: { KEY_BUNDLE_FETCH_LIMIT: '1000000000' },
        }),
      ),
    });
    return {
      value: {
        urls: run.platform.urls,
        logDir: run.logDir,
        backing: resolved.backing,
        gatewayPid: run.platform.pid('gateway') as number,
        databases: run.databases,
        pids: Object.fromEntries(Object.keys(run.platform.urls).map((name) => [name, run.platform.pid(name as ServiceProcess)])) as Record<
          ServiceProcess,
          number
        >,
      },
      stop: async () => {
        await run.stop();
        await cleanUp();
      },
    };
  } catch (err) {
    await cleanUp();
    throw err;
  }
}

type ProcessEnv = Partial<Record<ServiceProcess, Record<string, string>>>;

/** Sets DATABASE_POOL_SIZE of every service (the gateway has no database). */
function withPoolSize(size: number | undefined, env: ProcessEnv): ProcessEnv {
  if (size === undefined) return env;
  return { ...env, ...Object.fromEntries(SERVICES.map((name) => [name, { ...env[name], DATABASE_POOL_SIZE: String(size) }])) };
}

/**
 * Adds `--cpu-prof` to each process's NODE_OPTIONS, a folder per process: Node writes the profile
 * when the process exits (the runner stops them with SIGTERM, so they exit cleanly). Open one in
 * Chrome DevTools (Performance) or speedscope.
 */
function withProfiles(profileDir: string | undefined, env: ProcessEnv): ProcessEnv {
  if (!profileDir) return env;
  const names: ServiceProcess[] = [...SERVICES, 'gateway'];
  return Object.fromEntries(
    names.map((name) => [name, { ...env[name], NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${join(resolve(profileDir), name)}` }]),
  ) as ProcessEnv;
}

/** The bare Fastify hello-world (baseline-server.ts) as its own process; resolves once it answers. */
export async function startBaseline(): Promise<Running<string>> {
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', new URL('./baseline-server.ts', import.meta.url).pathname, String(port)], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => void (await stopChild(child));
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    if (hasExited(child)) throw new Error(`the baseline server exited (${child.exitCode ?? child.signalCode})`);
    if (await answers(url)) return { value: url, stop };
    await new Promise((r) => setTimeout(r, 100));
  }
  await stop();
  throw new Error(`the baseline server did not answer at ${url} within 20 s`);
}

async function answers(url: string): Promise<boolean> {
  try {
    return (await fetch(url, { signal: AbortSignal.timeout(500) })).ok;
  } catch {
    return false;
  }
}
