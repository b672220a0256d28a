import { mkdir, writeFile } from 'node:fs/promises';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import type { Figures } from './load.ts';
import type { ReferenceFigures } from './references.ts';
import type { SocketBenchResult } from './sockets.ts';
import type { TraceSinkFigures } from './trace-sink.ts';

/** One measured row: a scenario's load sent to one target. */
export interface Measurement {
  scenario: string;
  summary: string;
  /** Where the load went: the gateway, or a service directly. */
  via: string;
  connections: number;
  figures: Figures;
  /** The bare Fastify hello-world at the same connections, measured just before this scenario. */
  baseline: Figures;
  /** This row's req/s over the baseline's. */
  ratioToBaseline: number;
  /** On the gateway row of a scenario with a direct row: gateway req/s over the service's own. */
  ratioToDirect?: number;
  /** BENCH_TRACING=compare, on the traced gateway row: its req/s over the untraced gateway row's. */
  ratioToUntraced?: number;
  /** The payload of each request (uploads). */
  bytesPerRequest?: number;
  /** The scenario's reference (references.ts), and this row's req/s over the reference's operations/s. */
  reference?: string;
  ratioToReference?: number;
}

/** A reference as measured in the run. */
export interface MeasuredReference {
  name: string;
  summary: string;
  unit: string;
  bytesPerOperation?: number;
  connections: number;
  figures: ReferenceFigures;
}

/** A scenario that did not run: skipped by its setup (not built yet), or its setup failed. */
export interface NotRun {
  scenario: string;
  reason: string;
  failed: boolean;
}

export interface BenchReport {
  startedAt: string;
  /** loadAverage: the 1-minute load average when the run started; above the core count, other work competed. */
  machine: { node: string; platform: string; cpus: number; cpuModel: string; loadAverage: number };
  settings: {
    durationSeconds: number;
    warmupSeconds: number;
    connections: number;
    clientIpPool: number;
    logLevel: string;
    nodeEnv: string;
    /** BENCH_DATABASE_POOL_SIZE when the run set it. */
    databasePoolSize?: number;
  };
  measurements: Measurement[];
  /** The building blocks the scenarios are compared with, measured alone in the same run. */
  references: MeasuredReference[];
  notRun: NotRun[];
  /** The real-time socket's benches (sockets.ts). */
  sockets?: SocketBenchResult;
  /** BENCH_TRACING=compare: what the traced platform exported to the bench's sink. */
  tracing?: TraceSinkFigures;
}

export function machine(): BenchReport['machine'] {
  const cores = cpus();
  return {
    node: process.version,
    platform: `${process.platform}-${process.arch}`,
    cpus: cores.length,
    cpuModel: cores[0]?.model ?? 'unknown',
    loadAverage: Number(loadavg()[0]!.toFixed(2)),
  };
}

/** A result is suspect when any answer had the wrong status or any request failed. */
export function isSuspect(m: Measurement): boolean {
  return m.figures.unexpected > 0 || m.figures.errors > 0;
}

const COLUMNS = [
  'scenario',
  'via',
  'conns',
  'req/s',
  'p50 ms',
  'p99 ms',
  'base req/s',
  'base p50',
  'base p99',
  'x base',
  'x direct',
  'MiB/s',
  'x ref',
  'bad',
];

export function formatTable(report: BenchReport): string {
  const rows = report.measurements.map((m) => [
    m.scenario,
    m.via,
    String(m.connections),
    String(m.figures.requestsPerSecond),
    String(m.figures.p50),
    String(m.figures.p99),
    String(m.baseline.requestsPerSecond),
    String(m.baseline.p50),
    String(m.baseline.p99),
    m.ratioToBaseline.toFixed(3),
    m.ratioToDirect === undefined ? '' : m.ratioToDirect.toFixed(3),
    m.bytesPerRequest === undefined ? '' : mebibytesPerSecond(m.figures.requestsPerSecond, m.bytesPerRequest),
    m.ratioToReference === undefined ? '' : m.ratioToReference.toFixed(3),
    isSuspect(m) ? `${m.figures.unexpected + m.figures.errors} (${describeStatuses(m.figures)})` : '0',
  ]);
  const widths = COLUMNS.map((c, i) => Math.max(c.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => (i < 2 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  const out = [line(COLUMNS), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)];
  for (const n of report.notRun) out.push(`${n.failed ? 'FAILED ' : 'skipped'} ${n.scenario}: ${n.reason}`);
  const s = report.settings;
  out.push(
    '',
    `${s.durationSeconds} s per row after ${s.warmupSeconds} s warm-up; client IPs from a pool of ${s.clientIpPool}; ` +
      `services at NODE_ENV=${s.nodeEnv}, LOG_LEVEL=${s.logLevel}; ${report.machine.cpus} cores, Node ${report.machine.node}, ` +
      `load average ${report.machine.loadAverage} at the start`,
  );
  return out.join('\n');
}

/** BENCH_TRACING=compare: each scenario's traced gateway row over its untraced one, measured back to back. */
export function formatTracing(report: BenchReport): string {
  const lines = report.measurements
    .filter((m) => m.ratioToUntraced !== undefined)
    .map((traced) => {
      const untraced = report.measurements.find((m) => m.scenario === traced.scenario && m.via === 'gateway');
      const f = traced.figures;
      const u = untraced?.figures;
      return (
        `  ${traced.scenario}: tracing on ${f.requestsPerSecond} req/s (p99 ${f.p99} ms), off ${u?.requestsPerSecond} req/s ` +
        `(p99 ${u?.p99} ms): on/off = ${(traced.ratioToUntraced ?? 0).toFixed(3)}`
      );
    });
  const t = report.tracing;
  return [
    'tracing, the same scenario through two platforms of the same run (every process traced vs tracing off):',
    ...lines,
    `  the traced platform sent ${t?.exports ?? 0} OTLP exports (${((t?.bytes ?? 0) / 1024 / 1024 || 0).toFixed(1)} MiB) to the sink`,
  ].join('\n');
}

/** Each reference, and the rows compared with it ("x ref" in the table). */
export function formatReferences(report: BenchReport): string {
  return report.references
    .map((r) => {
      const f = r.figures;
      const rate = r.bytesPerOperation === undefined ? '' : ` = ${mebibytesPerSecond(f.perSecond, r.bytesPerOperation)} MiB/s`;
      const rows = report.measurements
        .filter((m) => m.reference === r.name && m.connections === r.connections)
        .map(
          (m) =>
            `    ${m.scenario} via ${m.via}: ${m.figures.requestsPerSecond} req/s = ${(m.ratioToReference ?? 0).toFixed(3)} x reference`,
        );
      return [
        `reference ${r.name}, ${r.connections} callers: ${f.perSecond} ${r.unit}/s${rate}, p50 ${f.p50} ms, p99 ${f.p99} ms (${r.summary})`,
        ...rows,
      ].join('\n');
    })
    .join('\n');
}

function mebibytesPerSecond(perSecond: number, bytes: number): string {
  return ((perSecond * bytes) / 1024 / 1024).toFixed(1);
}

function describeStatuses(f: Figures): string {
  const statuses = Object.entries(f.statuses).map(([status, n]) => `${status}: ${n}`);
  if (f.errors > 0) statuses.push(`errors: ${f.errors}`);
  return statuses.join(', ');
}

/** Writes the report as `<dir>/<timestamp>.json` and returns the path. */
export async function writeReport(report: BenchReport, dir: string): Promise<string> {
  await mkdir(dir, { recursive: true });
  const path = join(dir, `${report.startedAt.replace(/[:.]/g, '-')}.json`);
  await writeFile(path, `${JSON.stringify(report, null, 2)}\n`);
  return path;
}
