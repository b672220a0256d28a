import { readFile } from 'node:fs/promises';
import WebSocket from 'ws';
import { type Figures, measure } from './load.ts';
import type { BenchContext, BenchUser } from './scenario.ts';

/**
 * The real-time socket's benches (npm run bench, names `socket.*`): they hold thousands of real
 * WebSocket clients in the bench process, which the autocannon rows cannot, so they have a runner
 * and a table of their own.
 *
 * - socket.idle: IDLE_SOCKETS identified sockets on the one gateway process, heartbeating at the
 *   interval HELLO gives: the gateway's resident memory per socket, and its CPU while they only
 *   heartbeat.
 * - socket.fanout: one channel watched by WATCHERS sockets (MEMBERS members with
 *   WATCHERS / MEMBERS sessions each): for each of FANOUT_MESSAGES posts, the time from the POST
 *   until the last socket has the dispatch (p50, p99), every delivery's latency, and the messages
 *   per second delivered to every watcher while posting as fast as FANOUT_POSTERS callers can.
 * - socket.rest: messages.post throughput through the gateway with no socket, then with
 *   WATCHERS identified sockets attached (members of the server, heartbeating; the posts go to a
 *   channel only the owner sees, so the fan-out itself is socket.fanout's figure).
 */

const IDLE_SOCKETS = 10_000;
const MEMBERS = 100;
const WATCHERS = 1_000;
const FANOUT_MESSAGES = 50;
const FANOUT_POSTERS = 4;
const OPEN_CONCURRENCY = 100;
/** Posts of the sustained fan-out at most (each one lands in every watcher's replay buffer). */
const SUSTAINED_MAX = 400;
const VIEW_CHANNEL = 1 << 10;

export interface SocketBenchResult {
  idle?: {
    sockets: number;
    rssBeforeMiB: number;
    rssAfterMiB: number;
    kibPerSocket: number;
    heartbeatsPerSecond: number;
    cpuPercent: number;
  };
  fanout?: {
    watchers: number;
    messages: number;
    lastSocketP50: number;
    lastSocketP99: number;
    deliveryP50: number;
    deliveryP99: number;
    sustainedMessagesPerSecond: number;
    sustainedDeliveriesPerSecond: number;
  };
  rest?: { without: Figures; with: Figures; ratio: number };
  skipped: string[];
}

interface Watcher {
  ws: WebSocket;
  onDispatch?: (t: string, d: { content?: string }) => void;
  timer?: NodeJS.Timeout;
}

export async function runSocketBenches(options: {
  ctx: BenchContext;
  gatewayUrl: string;
  gatewayPid: number;
  selected: (name: string) => boolean;
  nextClientIp: () => string;
  durationSeconds: number;
  warmupSeconds: number;
  connections: number;
  progress: (message: string) => void;
}): Promise<SocketBenchResult> {
  const { ctx, progress } = options;
  const result: SocketBenchResult = { skipped: [] };
  const info = await ctx.api('GET', '/v1/gateway');
  if (info.status !== 200) return { skipped: [`GET /v1/gateway answered ${info.status}`] };

  progress(`socket benches: registering ${MEMBERS} members and their server`);
  const owner = await ctx.registerUser('bench_sock_owner');
  const members: BenchUser[] = [];
  for (let i = 0; i < MEMBERS; i += 10)
    members.push(...(await Promise.all(Array.from({ length: 10 }, () => ctx.registerUser('bench_sock')))));
  const server = await ctx.api('POST', '/v1/servers', { token: owner.token, body: { name: 'Bench sockets', isPublic: true } });
  for (const m of members) await ctx.api('POST', `/v1/servers/${server.body.id}/join`, { token: m.token });
  const channels = (await ctx.api('GET', `/v1/servers/${server.body.id}/channels`, { token: owner.token })).body as {
    id: string;
    channelType: string;
  }[];
  const channelId = (channels.find((c) => c.channelType === 'text') as { id: string }).id;
  // socket.rest posts where only the owner (no socket) may look: it measures what attached sockets
  // cost the REST path; what a fan-out costs is socket.fanout's. A load of thousands of posts into
  // 1,000 sessions would also fill a shared Redis with replay buffers.
  const hidden = await ctx.api('POST', `/v1/servers/${server.body.id}/channels`, {
    token: owner.token,
    body: { name: 'owner-only', channelType: 'text' },
  });
  await ctx.api('PUT', `/v1/channels/${hidden.body.id}/permissions`, {
    token: owner.token,
    body: { roleId: server.body.id, allowBits: 0, denyBits: VIEW_CHANNEL },
  });
  const postLoad = {
    expectStatus: 201,
    requests: [
      {
        method: 'POST' as const,
        path: `/v1/channels/${hidden.body.id}/messages`,
        headers: { authorization: `Bearer ${owner.token}` },
        body: { content: 'a message of about the length people type in chat' },
      },
    ],
  };
  const open = (count: number) => openIdentified(options, members, count);

  if (options.selected('socket.rest')) {
    progress(`socket.rest: messages.post through the gateway, no socket attached`);
    const settings = {
      connections: options.connections,
      durationSeconds: options.durationSeconds,
      warmupSeconds: options.warmupSeconds,
      nextClientIp: options.nextClientIp,
    };
    const without = await measure(options.gatewayUrl, postLoad, settings);
    const watchers = await open(WATCHERS);
    progress(`socket.rest: the same with ${WATCHERS} sockets watching the channel`);
    const withSockets = await measure(options.gatewayUrl, postLoad, settings);
    closeAll(watchers);
    result.rest = { without, with: withSockets, ratio: round(withSockets.requestsPerSecond / Math.max(1, without.requestsPerSecond), 3) };
    // The dispatch consumer works through that load's events before the next bench measures latencies.
    await settleDispatch(options, members, channelId, owner);
  }

  if (options.selected('socket.fanout')) {
    progress(`socket.fanout: opening ${WATCHERS} sockets on the channel`);
    const watchers = await open(WATCHERS);
    result.fanout = await fanout(ctx, watchers, channelId, owner, options.durationSeconds, progress);
    closeAll(watchers);
  }

  if (options.selected('socket.idle')) {
    const before = await rssMiB(options.gatewayPid);
    progress(`socket.idle: opening ${IDLE_SOCKETS} identified sockets`);
    const sockets = await open(IDLE_SOCKETS);
    await new Promise((r) => setTimeout(r, 3_000));
    const after = await rssMiB(options.gatewayPid);
    const interval = heartbeatIntervalMs;
    progress(`socket.idle: measuring the gateway's CPU for ${options.durationSeconds * 2} s of heartbeats`);
    const cpuStart = await cpuSeconds(options.gatewayPid);
    const wallStart = performance.now();
    await new Promise((r) => setTimeout(r, options.durationSeconds * 2 * 1000));
    const cpu = (await cpuSeconds(options.gatewayPid)) - cpuStart;
    const wall = (performance.now() - wallStart) / 1000;
    result.idle = {
      sockets: sockets.length,
      rssBeforeMiB: round(before, 1),
      rssAfterMiB: round(after, 1),
      kibPerSocket: round(((after - before) * 1024) / sockets.length, 1),
      heartbeatsPerSecond: round(sockets.length / (interval / 1000), 0),
      cpuPercent: round((cpu / wall) * 100, 1),
    };
    closeAll(sockets);
  }
  return result;
}

let heartbeatIntervalMs = 41_250;

/** Opens `count` sockets spread over the members, each identified (READY received) and heartbeating. */
async function openIdentified(
  options: { gatewayUrl: string; nextClientIp: () => string },
  members: BenchUser[],
  count: number,
): Promise<Watcher[]> {
  const url = `${options.gatewayUrl.replace(/^http/, 'ws')}/v1/gateway/ws`;
  const sockets: Watcher[] = [];
  for (let start = 0; start < count; start += OPEN_CONCURRENCY) {
    const batch = Array.from({ length: Math.min(OPEN_CONCURRENCY, count - start) }, (_, i) =>
      openOne(url, options.nextClientIp(), (members[(start + i) % members.length] as BenchUser).token),
    );
    sockets.push(...(await Promise.all(batch)));
  }
  return sockets;
}

/** A socket closed with 4000 (the gateway could not answer in time) is opened again, as a client would. */
async function openOne(url: string, ip: string, token: string): Promise<Watcher> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await tryOpen(url, ip, token);
    } catch (err) {
      if (attempt >= 5 || !/closed with 4000/.test((err as Error).message)) throw err;
      await new Promise((r) => setTimeout(r, 500 * attempt));
    }
  }
}

function tryOpen(url: string, ip: string, token: string): Promise<Watcher> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers: { 'x-forwarded-for': ip }, perMessageDeflate: false });
    const watcher: Watcher = { ws };
    let seq: number | null = null;
    const timeout = setTimeout(() => reject(new Error('a socket was not ready within 60 s')), 60_000);
    ws.on('error', reject);
    ws.on('close', (code) => {
      clearInterval(watcher.timer);
      if (code !== 1000 && code !== 1005) reject(new Error(`a socket closed with ${code}`));
    });
    ws.on('message', (raw) => {
      const frame = JSON.parse(String(raw)) as {
        op: number;
        d: { heartbeatInterval?: number; content?: string };
        s: number | null;
        t: string | null;
      };
      if (frame.s !== null) seq = frame.s;
      if (frame.op === 10) {
        heartbeatIntervalMs = frame.d.heartbeatInterval as number;
        ws.send(JSON.stringify({ op: 2, d: { token } }));
        // As real clients do: the first heartbeat at a random point of the interval, then one per interval.
        setTimeout(() => {
          // Closed before its first heartbeat: an interval now would keep the bench from exiting.
          if (ws.readyState !== WebSocket.OPEN) return;
          ws.send(JSON.stringify({ op: 1, d: seq }));
          watcher.timer = setInterval(() => ws.send(JSON.stringify({ op: 1, d: seq })), heartbeatIntervalMs);
        }, Math.random() * heartbeatIntervalMs).unref();
      } else if (frame.op === 0 && frame.t === 'READY') {
        clearTimeout(timeout);
        resolve(watcher);
      } else if (frame.op === 0) watcher.onDispatch?.(frame.t as string, frame.d);
    });
  });
}

function closeAll(sockets: Watcher[]) {
  for (const s of sockets) {
    clearInterval(s.timer);
    s.ws.removeAllListeners('close');
    s.ws.on('close', () => {});
    s.ws.close(1000);
  }
}

async function fanout(
  ctx: BenchContext,
  watchers: Watcher[],
  channelId: string,
  owner: BenchUser,
  durationSeconds: number,
  progress: (m: string) => void,
) {
  const postedAt = new Map<string, number>();
  const received = new Map<string, number[]>();
  const onDispatch = (t: string, d: { content?: string }) => {
    if (t !== 'MESSAGE_CREATE' || !d.content) return;
    const at = postedAt.get(d.content);
    if (at === undefined) return;
    const list = received.get(d.content) ?? [];
    list.push(performance.now() - at);
    received.set(d.content, list);
  };
  for (const w of watchers) w.onDispatch = onDispatch;
  const everyoneHas = (content: string) => (received.get(content)?.length ?? 0) >= watchers.length;
  const waitFor = async (check: () => boolean, timeoutMs: number) => {
    const deadline = Date.now() + timeoutMs;
    while (!check() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 2));
  };

  progress(`socket.fanout: ${FANOUT_MESSAGES} messages one after the other to ${watchers.length} sockets`);
  const lastSocket: number[] = [];
  for (let i = 0; i < FANOUT_MESSAGES; i++) {
    const content = `fanout ${i} ${Math.random()}`;
    postedAt.set(content, performance.now());
    await ctx.api('POST', `/v1/channels/${channelId}/messages`, { token: owner.token, body: { content } });
    await waitFor(() => everyoneHas(content), 10_000);
    const times = received.get(content) ?? [];
    lastSocket.push(times.length >= watchers.length ? Math.max(...times) : Number.POSITIVE_INFINITY);
  }
  const deliveries = [...received.values()].flat();

  progress(`socket.fanout: posting from ${FANOUT_POSTERS} callers for ${durationSeconds} s`);
  const sustained: string[] = [];
  const start = performance.now();
  const until = start + durationSeconds * 1000;
  await Promise.all(
    Array.from({ length: FANOUT_POSTERS }, async (_, poster) => {
      for (let n = 0; performance.now() < until && sustained.length < SUSTAINED_MAX; n++) {
        const content = `sustained ${poster} ${n} ${Math.random()}`;
        postedAt.set(content, performance.now());
        sustained.push(content);
        await ctx.api('POST', `/v1/channels/${channelId}/messages`, { token: owner.token, body: { content } });
      }
    }),
  );
  await waitFor(() => sustained.every(everyoneHas), 120_000);
  const lastDelivery = Math.max(
    ...sustained.map((c) => (postedAt.get(c) as number) + Math.max(...(received.get(c) ?? [Number.POSITIVE_INFINITY]))),
  );
  const seconds = (lastDelivery - start) / 1000;
  for (const w of watchers) w.onDispatch = undefined;
  return {
    watchers: watchers.length,
    messages: FANOUT_MESSAGES,
    lastSocketP50: round(percentile(lastSocket, 50), 1),
    lastSocketP99: round(percentile(lastSocket, 99), 1),
    deliveryP50: round(percentile(deliveries, 50), 1),
    deliveryP99: round(percentile(deliveries, 99), 1),
    sustainedMessagesPerSecond: round(sustained.length / seconds, 1),
    sustainedDeliveriesPerSecond: round((sustained.length * watchers.length) / seconds, 0),
  };
}

/** Waits until a fresh message reaches one watcher: the dispatches queued by a load have drained. */
async function settleDispatch(
  options: { gatewayUrl: string; nextClientIp: () => string },
  members: BenchUser[],
  channelId: string,
  owner: BenchUser,
) {
  const [probe] = await openIdentified(options, members, 1);
  const content = `settle ${Math.random()}`;
  const arrived = new Promise<void>((resolve) => {
    (probe as Watcher).onDispatch = (t, d) => t === 'MESSAGE_CREATE' && d.content === content && resolve();
  });
  await fetch(`${options.gatewayUrl}/v1/channels/${channelId}/messages`, {
    method: 'POST',
    headers: { authorization: `Bearer ${owner.token}`, 'content-type': 'application/json', 'x-forwarded-for': options.nextClientIp() },
    body: JSON.stringify({ content }),
  });
  let gaveUp: NodeJS.Timeout | undefined;
  await Promise.race([arrived, new Promise((r) => (gaveUp = setTimeout(r, 300_000)))]);
  clearTimeout(gaveUp);
  closeAll([probe as Watcher]);
}

function percentile(values: number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] as number;
}

const round = (n: number, digits: number) => Math.round(n * 10 ** digits) / 10 ** digits;

async function rssMiB(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
}

/** utime + stime of the process, in seconds. */
async function cpuSeconds(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** The lines printed after the main table. */
export function formatSocketResults(r: SocketBenchResult): string {
  const lines = ['real-time socket'];
  if (r.idle) {
    lines.push(
      `  socket.idle    ${r.idle.sockets} identified sockets: gateway RSS ${r.idle.rssBeforeMiB} -> ${r.idle.rssAfterMiB} MiB, ${r.idle.kibPerSocket} KiB per socket; ` +
        `${r.idle.heartbeatsPerSecond} heartbeats/s cost ${r.idle.cpuPercent}% of one core`,
    );
  }
  if (r.fanout) {
    lines.push(
      `  socket.fanout  ${r.fanout.messages} posts to ${r.fanout.watchers} sockets: last socket has it after p50 ${r.fanout.lastSocketP50} ms, p99 ${r.fanout.lastSocketP99} ms ` +
        `(each delivery p50 ${r.fanout.deliveryP50} ms, p99 ${r.fanout.deliveryP99} ms); sustained ${r.fanout.sustainedMessagesPerSecond} messages/s into every watcher ` +
        `(${r.fanout.sustainedDeliveriesPerSecond} deliveries/s)`,
    );
  }
  if (r.rest) {
    lines.push(
      `  socket.rest    messages.post through the gateway: ${r.rest.without.requestsPerSecond} req/s with no socket, ${r.rest.with.requestsPerSecond} req/s ` +
        `with ${WATCHERS} identified sockets attached (x ${r.rest.ratio}); p99 ${r.rest.without.p99} -> ${r.rest.with.p99} ms; bad ${r.rest.without.unexpected + r.rest.with.unexpected + r.rest.without.errors + r.rest.with.errors}`,
    );
  }
  for (const s of r.skipped) lines.push(`  skipped: ${s}`);
  return lines.join('\n');
}
