import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';

/** The parts of a V8 CPU profile (`--cpu-prof`) the summary reads. */
export interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }[];
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileSummary {
  /** Sampled time, idle included (ms). */
  totalMs: number;
  /** Share of the samples not idle. */
  busyShare: number;
  /** Self time by where the code comes from (a package, node's own modules, ours, the engine), as shares of the busy samples. */
  byOrigin: [origin: string, share: number][];
  /** Self time by function, as shares of the busy samples. */
  byFunction: [fn: string, share: number][];
  /** Time inside socket writes, by the first function of ours or a package's that made them, as shares of the busy samples. */
  writesBy: [caller: string, share: number][];
}

// The engine's and libuv's own socket writes (no JavaScript below them).
const SOCKET_WRITES = new Set(['writev', 'writeBuffer', 'writeUtf8String', 'writeLatin1String', 'writeAsciiString', 'writeUcs2String']);

/**
 * Where a profiled process spent its samples. Beware the socket writes: V8 samples wall time, so a
 * write that wakes another process on a busy machine is often preempted inside the system call,
 * and that wait reads as the write's own time; `writesBy` names who wrote, to tell pg's, NATS's and
 * HTTP's writes apart.
 */
export function summarizeProfile(profile: CpuProfile, top = 20): ProfileSummary {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parentOf = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node.id);
  const add = <K>(into: Map<K, number>, key: K, us: number) => into.set(key, (into.get(key) ?? 0) + us);
  const selfUs = new Map<number, number>();
  for (const [i, id] of profile.samples.entries()) add(selfUs, id, profile.timeDeltas[i] ?? 0);

  let total = 0;
  let idle = 0;
  const byOrigin = new Map<string, number>();
  const byFunction = new Map<string, number>();
  const writesBy = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const frame = byId.get(id)?.callFrame;
    if (!frame) continue;
    total += us;
    if (frame.functionName === '(idle)') {
      idle += us;
      continue;
    }
    add(byOrigin, originOf(frame.url, frame.functionName), us);
    add(byFunction, `${frame.functionName || '(anonymous)'}${frame.url ? ` ${shortUrl(frame.url)}:${frame.lineNumber + 1}` : ''}`, us);
    if (SOCKET_WRITES.has(frame.functionName)) add(writesBy, writerOf(id, byId, parentOf), us);
  }
  const busy = total - idle;
  const shares = (from: Map<string, number>) =>
    [...from]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([key, us]): [string, number] => [key, busy > 0 ? us / busy : 0]);
  return {
    totalMs: total / 1000,
    busyShare: total > 0 ? busy / total : 0,
    byOrigin: shares(byOrigin),
    byFunction: shares(byFunction),
    writesBy: shares(writesBy),
  };
}

/** A package's name, `node:<module>`, the file of ours, or the engine's own entry ("(garbage collector)", a native call). */
function originOf(url: string, functionName: string): string {
  const inPackage = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (inPackage?.[1]) return inPackage[1];
  if (url.startsWith('node:')) return `node:${url.slice(5).split('/')[0]}`;
  return url ? shortUrl(url) : functionName || '(native)';
}

const shortUrl = (url: string) => url.replace(/^.*node_modules\//, '').replace(/^file:\/\/.*\/(dist|services|libs|scripts)\//, '$1/');

/** The first caller of a write that is neither Node's own stream code nor the engine's. */
function writerOf(id: number, byId: Map<number, CpuProfile['nodes'][number]>, parentOf: Map<number, number>): string {
  for (let at = parentOf.get(id); at !== undefined; at = parentOf.get(at)) {
    const frame = byId.get(at)?.callFrame;
    if (frame?.url && !frame.url.startsWith('node:')) return `${frame.functionName || '(anonymous)'} ${shortUrl(frame.url)}`;
  }
  return '(node itself)';
}

/** The summary of each process's profiles under `dir` (as `npm run bench -- --profile` writes them: `<dir>/<process>/*.cpuprofile`). */
export async function summarizeProfiles(dir: string, top?: number): Promise<Record<string, ProfileSummary>> {
  const summaries: Record<string, ProfileSummary> = {};
  for (const process of (await readdir(dir, { withFileTypes: true })).filter((e) => e.isDirectory()).map((e) => e.name)) {
    const files = (await readdir(join(dir, process))).filter((name) => name.endsWith('.cpuprofile'));
    for (const file of files) {
      const profile = JSON.parse(await readFile(join(dir, process, file), 'utf8')) as CpuProfile;
      summaries[files.length === 1 ? process : `${process}/${file}`] = summarizeProfile(profile, top);
    }
  }
  return summaries;
}

export function formatProfileSummary(name: string, s: ProfileSummary): string {
  const percent = (share: number) => `${(share * 100).toFixed(1).padStart(5)}%`;
  const list = (title: string, rows: [string, number][]) => [`  ${title}`, ...rows.map(([key, share]) => `    ${percent(share)}  ${key}`)];
  return [
    `${name}: ${Math.round(s.totalMs)} ms sampled, ${percent(s.busyShare).trim()} busy (shares below are of the busy samples)`,
    ...list('self time by origin', s.byOrigin),
    ...list('self time by function', s.byFunction),
    ...list('socket writes by writer (wall time: includes waiting for the CPU)', s.writesBy),
  ].join('\n');
}
