import { readFile } from 'node:fs/promises';
import type { ServiceProcess } from '@chat/testkit';
import autocannon from 'autocannon';
import { clientIpCycle } from './client-ips.ts';
import { createContext } from './context.ts';
import { startBenchPlatform } from './processes.ts';
import { loadScenarios, selectScenarios } from './registry.ts';
import { isSkip } from './scenario.ts';

// `npm run bench:cpu`: CPU time per request of each process, for the scenarios BENCH_SCENARIOS
// names, through the gateway and straight to the service. On a loaded machine req/s says little;
// the CPU a request costs each process does not depend on what else runs. Each row sends
// BENCH_CPU_REQUESTS requests (after a quarter as many to warm up) from BENCH_CONNECTIONS
// connections and reads utime + stime of every process from /proc before and after.

const REQUESTS = Number(process.env.BENCH_CPU_REQUESTS ?? 4_000);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);
const filter = (process.env.BENCH_SCENARIOS ?? '').split(',').filter(Boolean);
const TICK_US = 1_000_000 / 100; // USER_HZ is 100 on Linux

const nextClientIp = clientIpCycle(65_536);
const platform = await startBenchPlatform({ nodeEnv: 'production', logLevel: 'warn' });
try {
  const { urls, pids } = platform.value;
  const ctx = createContext(urls, nextClientIp);
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
      const before = await cpuOf(pids);
      const result = await autocannon({ ...options, amount: REQUESTS });
      const after = await cpuOf(pids);
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
} finally {
  await platform.stop();
}

/** utime + stime of each process, in clock ticks. */
async function cpuOf(pids: Record<string, number>): Promise<Record<string, number>> {
  const entries = await Promise.all(
    Object.entries(pids).map(async ([name, pid]) => {
      const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      return [name, Number(fields[11]) + Number(fields[12])] as const;
    }),
  );
  return Object.fromEntries(entries);
}
