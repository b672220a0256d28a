import { readdir, readFile } from 'node:fs/promises';
import { createPool } from '@chat/kit';
import type { ServiceProcess } from '@chat/testkit';
import autocannon from 'autocannon';
import { clientIpCycle } from './client-ips.ts';
import { createContext } from './context.ts';
import { benchLifecycle } from './lifecycle.ts';
import { startBenchPlatform } from './processes.ts';
import { loadScenarios, selectScenarios } from './registry.ts';
import { isSkip } from './scenario.ts';

// `npm run bench:cpu`: CPU time per request of each process, for the scenarios BENCH_SCENARIOS
// names, through the gateway and straight to the service. On a loaded machine req/s says little;
// the CPU a request costs each process does not depend on what else runs. Each row sends
// BENCH_CPU_REQUESTS requests (after a quarter as many to warm up) from BENCH_CONNECTIONS
// connections and reads utime + stime of every process from /proc before and after, and of the
// PostgreSQL backends serving each service's database ("pg:guilds": the database's own work), of
// the NATS and Redis servers when they run on this machine (their work for every namespace, this
// run's being all there is on a quiet machine), and of the load generator itself ("bench").

const REQUESTS = Number(process.env.BENCH_CPU_REQUESTS ?? 4_000);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);
const filter = (process.env.BENCH_SCENARIOS ?? '').split(',').filter(Boolean);
const TICK_US = 1_000_000 / 100; // USER_HZ is 100 on Linux

const nextClientIp = clientIpCycle(65_536);
const { start, stopAll } = benchLifecycle((message) => console.error(`[bench:cpu] ${message}`));
try {
  const { urls, pids, databases, backing } = await start(startBenchPlatform({ nodeEnv: 'production', logLevel: 'warn' }));
  const ctx = createContext(urls, databases, nextClientIp);
  const admin = createPool(backing.postgresUrl, 1);
  // Found once: they run for the whole bench.
  const servers = await backingProcesses();
  const databaseOf = Object.fromEntries(Object.entries(databases).map(([service, url]) => [new URL(url).pathname.slice(1), service]));
  /** The platform's processes and its PostgreSQL backends (named pg:<service>, summed per service). */
  const measured = async () => {
    const { rows } = await admin.query<{ pid: number; datname: string }>(
      'SELECT pid, datname FROM pg_stat_activity WHERE datname = ANY($1)',
      [Object.keys(databaseOf)],
    );
    return [
      ...Object.entries(pids),
      ...rows.map((r) => [`pg:${databaseOf[r.datname]}`, r.pid] as [string, number]),
      ...servers,
      ['bench', process.pid] as [string, number],
    ];
  };
  for (const scenario of selectScenarios(await loadScenarios(), filter)) {
    const load = await scenario.setup(ctx);
    if (isSkip(load)) {
      console.log(`${scenario.name}: skipped (${load.skip})`);
      continue;
    }
    for (const via of ['gateway', ...(scenario.direct ? [scenario.direct] : [])] as ServiceProcess[]) {
      const requests = load.requests.map((r) => ({
        method: r.method,
        path: r.path,
        headers: { ...(r.body === undefined ? {} : { 'content-type': 'application/json' }), ...r.headers },
        body: r.body === undefined ? undefined : JSON.stringify(r.body),
        setupRequest: (req: { headers?: Record<string, string> }) => ({
          ...req,
          headers: { ...req.headers, 'x-forwarded-for': nextClientIp() },
        }),
      }));
      const options = { url: urls[via], connections: CONNECTIONS, pipelining: 1, timeout: 10, requests };
      await autocannon({ ...options, amount: Math.ceil(REQUESTS / 4) });
      const before = await cpuOf(await measured());
      const result = await autocannon({ ...options, amount: REQUESTS });
      const after = await cpuOf(await measured());
      const perRequest = Object.entries(after)
        .map(([name, ticks]) => [name, ((ticks - (before[name] ?? 0)) * TICK_US) / result.requests.total] as const)
        .filter(([, us]) => us >= 1)
        .map(([name, us]) => `${name} ${Math.round(us)}`)
        .join(', ');
      const statuses = Object.entries(result.statusCodeStats)
        .map(([status, { count }]) => `${status}x${count}`)
        .join(' ');
      console.log(`${scenario.name} via ${via}: CPU µs/request ${perRequest} (${result.requests.total} requests, ${statuses})`);
    }
  }
  await admin.end();
} finally {
  await stopAll();
}

/** The NATS and Redis servers of this machine, by their command name ([] where they run elsewhere). */
async function backingProcesses(): Promise<[string, number][]> {
  const names: Record<string, string> = { 'nats-server': 'nats', 'redis-server': 'redis' };
  const found: [string, number][] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const comm = (await readFile(`/proc/${entry}/comm`, 'utf8').catch(() => '')).trim();
    const name = names[comm];
    if (name) found.push([name, Number(entry)]);
  }
  return found;
}

/** utime + stime per name, in clock ticks, summed over the processes of a name; a process gone since counts nothing. */
async function cpuOf(processes: [string, number][]): Promise<Record<string, number>> {
  const ticks: Record<string, number> = {};
  for (const [name, pid] of processes) {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
    if (!stat) continue;
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    ticks[name] = (ticks[name] ?? 0) + Number(fields[11]) + Number(fields[12]);
  }
  return ticks;
}
