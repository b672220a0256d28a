import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { configOrExit } from '@chat/kit';
import { clientIpCycle } from './client-ips.ts';
import { createContext } from './context.ts';
import { benchLifecycle } from './lifecycle.ts';
import { type Figures, type LoadSettings, measure } from './load.ts';
import { type BenchPlatform, startBaseline, startBenchPlatform } from './processes.ts';
import { closedLoop, type HttpReference, type OperationReference, type Reference, type ReferenceFigures } from './references.ts';
import { loadScenarios, selectScenarios } from './registry.ts';
import {
  type BenchReport,
  formatReferences,
  formatTable,
  formatTracing,
  isSuspect,
  type MeasuredReference,
  type Measurement,
  machine,
  type NotRun,
  writeReport,
} from './report.ts';
import { type BenchContext, isSkip, type Scenario, type ScenarioLoad } from './scenario.ts';
import { BenchSettings } from './settings.ts';
import { formatSocketResults, runSocketBenches } from './sockets.ts';
import { startTraceSink } from './trace-sink.ts';

// `npm run bench`: starts the platform and a baseline server, runs every scenario of scenarios/
// (or those BENCH_SCENARIOS names), prints a table and writes it to bench-results/. See README.md.

const execFileAsync = promisify(execFile);
const settings = configOrExit(BenchSettings, 'bench');
// `npm run bench -- --profile`: a CPU profile per platform process, beside the results.
const profile = process.argv.slice(2).includes('--profile');
// `socket.*` names the real-time socket's benches (sockets.ts), which have their own runner.
const isSocketName = (name: string) => name === 'socket.' || name.startsWith('socket.');
const httpFilter = settings.BENCH_SCENARIOS.filter((f) => !isSocketName(f));
const socketFilter = settings.BENCH_SCENARIOS.filter(isSocketName);
const onlySockets = settings.BENCH_SCENARIOS.length > 0 && httpFilter.length === 0;
const scenarios = onlySockets ? [] : selectScenarios(await loadScenarios(), httpFilter);
const socketSelected = (name: string) =>
  settings.BENCH_SCENARIOS.length === 0 || socketFilter.some((f) => f === name || (f.endsWith('.') && name.startsWith(f)));
const runSockets = ['socket.idle', 'socket.fanout', 'socket.rest'].some(socketSelected);
const nextClientIp = clientIpCycle(settings.BENCH_IP_POOL);
const { start, stopAll } = benchLifecycle(progress);
// Taken before the platform starts, whose start-up would count in the load average.
const startedAt = new Date().toISOString();
const profileDir = profile ? join(settings.BENCH_RESULTS_DIR, `${startedAt.replace(/[:.]/g, '-')}-profiles`) : undefined;
const host = machine();

progress(`starting the platform and the baseline (${scenarios.length} scenarios: ${scenarios.map((s) => s.name).join(', ')})`);
const [platform, baseline] = await startProcesses(settings);
progress(`platform ready (logs in ${platform.logDir})`);
const traced =
  settings.BENCH_TRACING === 'compare'
    ? await startTracedPlatform().catch(async (err) => {
        await stopAll();
        throw err;
      })
    : undefined;

const report: BenchReport = {
  startedAt,
  machine: host,
  settings: {
    durationSeconds: settings.BENCH_DURATION,
    warmupSeconds: settings.BENCH_WARMUP,
    connections: settings.BENCH_CONNECTIONS,
    clientIpPool: settings.BENCH_IP_POOL,
    logLevel: settings.BENCH_LOG_LEVEL,
    nodeEnv: settings.BENCH_NODE_ENV,
    ...(settings.BENCH_DATABASE_POOL_SIZE === undefined ? {} : { databasePoolSize: settings.BENCH_DATABASE_POOL_SIZE }),
  },
  measurements: [],
  references: [],
  notRun: [],
};
const ctx = createContext(platform.urls, platform.databases, nextClientIp);
const tracedCtx = traced && createContext(traced.platform.urls, traced.platform.databases, nextClientIp);

try {
  for (const scenario of scenarios) {
    const outcome = await runScenario(scenario, ctx);
    if ('reason' in outcome) report.notRun.push(outcome);
    else report.measurements.push(...outcome);
  }
  if (runSockets) {
    report.sockets = await runSocketBenches({
      ctx,
      gatewayUrl: platform.urls.gateway,
      gatewayPid: platform.gatewayPid,
      selected: socketSelected,
      nextClientIp,
      durationSeconds: settings.BENCH_DURATION,
      warmupSeconds: settings.BENCH_WARMUP,
      connections: settings.BENCH_CONNECTIONS,
      progress,
    }).catch((err) => {
      report.notRun.push({ scenario: 'socket.*', reason: `failed: ${(err as Error).message}`, failed: true });
      return undefined;
    });
  }
} finally {
  if (traced) report.tracing = { ...report.tracing, ...traced.sink.figures() };
  await stopAll();
}

console.log(`\n${formatTable(report)}`);
if (report.sockets) console.log(`\n${formatSocketResults(report.sockets)}`);
if (report.references.length > 0) console.log(`\n${formatReferences(report)}`);
if (report.tracing) console.log(`\n${formatTracing(report)}`);
console.log(`\nwritten to ${await writeReport(report, settings.BENCH_RESULTS_DIR)}`);
if (profileDir)
  console.log(`CPU profiles of the platform's processes in ${profileDir}/<process>/ (npm run bench:profiles -- ${profileDir})`);
const trustworthy = report.measurements.every((m) => !isSuspect(m)) && report.notRun.every((n) => !n.failed);
if (!trustworthy) console.error('\nsome rows had wrong statuses or errors, or a setup failed: those figures are not comparable');
process.exitCode = trustworthy ? 0 : 1;

/** Measures one scenario through the gateway, and straight to its service when it names one. */
async function runScenario(scenario: Scenario, context: BenchContext): Promise<Measurement[] | NotRun> {
  let load: Awaited<ReturnType<Scenario['setup']>>;
  try {
    load = await scenario.setup(context);
  } catch (err) {
    return { scenario: scenario.name, reason: `setup failed: ${(err as Error).message}`, failed: true };
  }
  if (isSkip(load)) return { scenario: scenario.name, reason: load.skip, failed: false };
  let tracedLoad: ScenarioLoad | undefined;
  if (tracedCtx) {
    const prepared = await scenario
      .setup(tracedCtx)
      .catch((err: Error) => ({ skip: `setup on the traced platform failed: ${err.message}` }));
    if (isSkip(prepared)) return { scenario: scenario.name, reason: prepared.skip, failed: true };
    tracedLoad = prepared;
  }
  const connections = scenario.connections ?? settings.BENCH_CONNECTIONS;
  const base = await measureBaseline(connections);
  const through = await measureRow(scenario, 'gateway', load, connections, base);
  const rows = [through];
  if (traced && tracedLoad) {
    // Right after the untraced row, so that the two compare figures taken under the same conditions.
    const tracedRow = await measureRow(scenario, 'gateway', tracedLoad, connections, base, traced.platform.urls.gateway);
    tracedRow.via = 'gateway (traced)';
    tracedRow.ratioToUntraced = ratio(tracedRow.figures, through.figures);
    rows.push(tracedRow);
  }
  if (scenario.direct) {
    const direct = await measureRow(scenario, scenario.direct, load, connections, base);
    through.ratioToDirect = ratio(through.figures, direct.figures);
    rows.push(direct);
  }
  if (scenario.reference) {
    const reference = await measureReference(scenario.reference, connections);
    for (const row of rows) {
      row.reference = reference.name;
      row.ratioToReference = reference.figures.perSecond === 0 ? 0 : row.figures.requestsPerSecond / reference.figures.perSecond;
    }
  }
  return rows;
}

/** A scenario's reference at its concurrency, measured once per run (scenarios may share one). */
async function measureReference(reference: Reference, connections: number): Promise<MeasuredReference> {
  const known = report.references.find((r) => r.name === reference.name && r.connections === connections);
  if (known) return known;
  progress(`reference: ${reference.name}, ${connections} callers`);
  const figures = 'load' in reference ? await measureHttpReference(reference, connections) : await measureOperation(reference, connections);
  const { name, summary, unit, bytesPerOperation } = reference;
  const measured: MeasuredReference = { name, summary, unit, bytesPerOperation, connections, figures };
  report.references.push(measured);
  return measured;
}

async function measureOperation(reference: OperationReference, connections: number): Promise<ReferenceFigures> {
  const { operation, cleanUp } = await reference.prepare(platform.backing);
  try {
    await settleDisk();
    if (settings.BENCH_WARMUP > 0) await closedLoop(connections, settings.BENCH_WARMUP, operation);
    return await closedLoop(connections, settings.BENCH_DURATION, operation);
  } finally {
    await cleanUp();
  }
}

/** An HTTP building block through the gateway, loaded by autocannon like the scenarios' rows. */
async function measureHttpReference(reference: HttpReference, connections: number): Promise<ReferenceFigures> {
  await settleDisk();
  const figures = await measure(platform.urls.gateway, await reference.load(ctx), loadSettings(connections));
  if (figures.unexpected + figures.errors > 0) progress(`reference ${reference.name} had wrong answers or errors: not comparable`);
  return { perSecond: figures.requestsPerSecond, p50: figures.p50, p99: figures.p99, operations: figures.requests };
}

async function measureRow(
  scenario: Scenario,
  via: keyof BenchPlatform['urls'],
  load: ScenarioLoad,
  connections: number,
  base: Figures,
  url = platform.urls[via],
): Promise<Measurement> {
  progress(`${scenario.name} via ${via}${url === platform.urls[via] ? '' : ' (traced)'}, ${connections} connections`);
  await settleDisk();
  const figures = await measure(url, load, loadSettings(connections));
  return {
    scenario: scenario.name,
    summary: scenario.summary,
    via,
    connections,
    figures,
    bytesPerRequest: load.bytesPerRequest,
    baseline: base,
    ratioToBaseline: ratio(figures, base),
  };
}

/**
 * The baseline, measured right before each scenario at its concurrency: on a machine whose load
 * drifts (other work, thermal limits), each ratio compares figures taken under the same conditions.
 */
async function measureBaseline(connections: number): Promise<Figures> {
  progress(`baseline (bare Fastify hello-world), ${connections} connections`);
  await settleDisk();
  return measure(baseline, { requests: [{ method: 'GET', path: '/' }] }, loadSettings(connections));
}

function loadSettings(connections: number): LoadSettings {
  return { connections, durationSeconds: settings.BENCH_DURATION, warmupSeconds: settings.BENCH_WARMUP, nextClientIp };
}

function ratio(a: Figures, b: Figures): number {
  return b.requestsPerSecond === 0 ? 0 : a.requestsPerSecond / b.requestsPerSecond;
}

/**
 * BENCH_TRACING=compare: a second platform, the same in every way but that each of its processes
 * traces, exporting its spans over OTLP/HTTP to a sink in this process.
 */
async function startTracedPlatform() {
  const sink = await start(startTraceSink().then((started) => ({ value: started, stop: started.close })));
  progress('starting the traced platform');
  const tracedPlatform = await start(
    startBenchPlatform({
      nodeEnv: settings.BENCH_NODE_ENV,
      logLevel: settings.BENCH_LOG_LEVEL,
      label: 'benchtr',
      env: { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: sink.url },
    }),
  );
  progress(`traced platform ready (logs in ${tracedPlatform.logDir})`);
  return { platform: tracedPlatform, sink };
}

/** Starts both; when either fails, stops the one that started. */
async function startProcesses(s: BenchSettings): Promise<[BenchPlatform, string]> {
  const settingsOfRun = {
    nodeEnv: s.BENCH_NODE_ENV,
    logLevel: s.BENCH_LOG_LEVEL,
    profileDir,
    databasePoolSize: s.BENCH_DATABASE_POOL_SIZE,
  };
  try {
    return await Promise.all([start(startBenchPlatform(settingsOfRun)), start(startBaseline())]);
  } catch (err) {
    await stopAll();
    throw err;
  }
}

/**
 * Writes dirty pages out before a row: uploads leave gigabytes for the kernel to write back, which
 * would otherwise compete with the next row for the CPU and the disk (seen as I/O wait).
 */
async function settleDisk() {
  await execFileAsync('sync').catch(() => {});
}

function progress(message: string) {
  console.error(`[bench] ${message}`);
}
