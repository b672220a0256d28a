import { connectBus, createLogger } from '@chat/kit';
import type { IsolatedPlatform } from '@chat/testkit';
import pg from 'pg';
import { expect } from 'vitest';
import { createLoad } from './ledger.ts';

/**
 * What every run of the fault suite does, whatever platform it runs against: a bounded load of
 * channel and direct messages with a ledger, the faults one after another (each healed after it
 * lasted, then timed until /v1/health says ok), and the checks afterwards from the ledger, the
 * databases and JetStream: 0 lost acknowledged writes, 0 duplicates, each committed write's event
 * exactly once, healthy again within HEALTHY_WITHIN_MS. The counts are printed as a table.
 */
export const HEALTHY_WITHIN_MS = 20_000;

export interface Fault {
  name: string;
  inject(): Promise<void> | void;
  heal(): Promise<void> | void;
  /** How long the fault lasts before it is healed. */
  lastsMs: number;
}

export interface SuiteTarget {
  run: IsolatedPlatform;
  /** The NATS (one URL or a cluster's, comma-separated) whose JetStream holds the events. */
  natsUrl: string;
  /** The table's title. */
  title: string;
  /** How many clients write at once. */
  clients: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
let ctx: SuiteTarget;

async function register(name: string) {
  const username = `${name}_${crypto.randomUUID().slice(0, 8)}`;
  const res = await fetch(`${ctx.run.platform.urls.gateway}/v1/auth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-forwarded-for': `10.250.0.${name.length}` },
    body: JSON.stringify({ username, email: `${username}@example.test`, password: 'fault-suite-pass' }),
  });
  expect(res.status).toBe(201);
  const body = (await res.json()) as { token: string; user: { id: string } };
  return { id: body.user.id, token: body.token };
}

async function call(token: string, method: string, path: string, body?: unknown) {
  const res = await fetch(`${ctx.run.platform.urls.gateway}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      'x-forwarded-for': '10.250.1.1',
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  // biome-ignore lint/suspicious/noExplicitAny: the suite reads what it needs from the answer
  return { status: res.status, body: (await res.json().catch(() => undefined)) as any };
}

/** Milliseconds until /v1/health says every process is ready. */
async function timeToHealthy(): Promise<number> {
  const started = Date.now();
  while (Date.now() - started < HEALTHY_WITHIN_MS * 3) {
    const ok = await fetch(`${ctx.run.platform.urls.gateway}/v1/health`, { signal: AbortSignal.timeout(2_000) })
      .then(async (r) => r.status === 200 && ((await r.json()) as { status: string }).status === 'ok')
      .catch(() => false);
    if (ok) return Date.now() - started;
    await sleep(200);
  }
  return Number.POSITIVE_INFINITY;
}

async function rows(database: string, sql: string, params: unknown[]) {
  const client = new pg.Client({ connectionString: database });
  await client.connect();
  try {
    return (await client.query(sql, params)).rows;
  } finally {
    await client.end();
  }
}

/** Every message id carried by the created-events of a stream, with how many times each appears. */
async function eventCounts(stream: string, subject: string): Promise<Map<string, number>> {
  const bus = await connectBus({
    url: ctx.natsUrl,
    namespace: ctx.run.namespace,
    name: 'faults-check',
    log: createLogger({ service: 'faults', level: 'silent' }),
  });
  const counts = new Map<string, number>();
  try {
    const name = bus.name(stream);
    const { state } = await bus.jsm.streams.info(name);
    for (let seq = state.first_seq; state.messages > 0 && seq <= state.last_seq; seq++) {
      const m = await bus.jsm.streams.getMessage(name, { seq }).catch(() => null);
      if (!m || m.subject !== bus.subject(subject)) continue;
      const data = (m.json() as { data: { id?: string; message?: { id: string } } }).data;
      const id = data.message?.id ?? data.id;
      if (id) counts.set(id, (counts.get(id) ?? 0) + 1);
    }
  } finally {
    await bus.close();
  }
  return counts;
}

async function outboxDrained(): Promise<boolean> {
  for (const database of [ctx.run.databases.guilds, ctx.run.databases.social]) {
    const [row] = await rows(database, 'SELECT count(*)::int AS n FROM outbox WHERE sent_at IS NULL', []);
    if (row.n > 0) return false;
  }
  return true;
}

interface PhaseCounts {
  phase: string;
  writes: number;
  acknowledged: number;
  retried: number;
  /** Answers other than 2xx in this phase, by status (conn: the connection broke). */
  failedAnswers: string;
  gaveUp: number;
  lost: number;
  duplicated: number;
  eventsMissing: number;
  eventsDoubled: number;
  healthyAfterMs: number | string;
}

function printTable(counts: PhaseCounts[]) {
  const columns = Object.keys(counts[0] ?? {}) as (keyof PhaseCounts)[];
  const widths = columns.map((c) => Math.max(c.length, ...counts.map((r) => String(r[c]).length)));
  const line = (cells: string[]) => `| ${cells.map((cell, i) => cell.padEnd(widths[i] ?? 0)).join(' | ')} |`;
  const out = [
    line(columns),
    `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`,
    ...counts.map((r) => line(columns.map((c) => String(r[c])))),
  ];
  process.stdout.write(`\nFault suite (${ctx.title}):\n${out.join('\n')}\n\n`);
}

/** Runs the load under each fault in turn, then checks, prints and asserts the counts. */
export async function exerciseFaults(target: SuiteTarget, faults: Fault[]): Promise<void> {
  ctx = target;
  const a = await register('alice');
  const b = await register('bob');
  const server = await call(a.token, 'POST', '/v1/servers', { name: 'Faults', isPublic: true });
  expect(server.status).toBe(201);
  expect((await call(b.token, 'POST', `/v1/servers/${server.body.id}/join`)).status).toBe(200);
  const channels = await call(a.token, 'GET', `/v1/servers/${server.body.id}/channels`);
  const channel = (channels.body as { id: string; channelType: string }[]).find((c) => c.channelType === 'text')!.id;
  const conversation = await call(a.token, 'POST', '/v1/dm/conversations', { userIds: [b.id] });
  expect(conversation.status).toBe(201);

  const load = createLoad(
    {
      gateway: ctx.run.platform.urls.gateway,
      channelUrl: `${ctx.run.platform.urls.gateway}/v1/channels/${channel}/messages`,
      conversationId: conversation.body.id,
      tokenOf: (client) => (client % 2 ? b.token : a.token),
    },
    { clients: target.clients, pauseMs: 20 },
  );
  const healthy = new Map<string, number>();
  const phases = ['warm-up', ...new Set(faults.map((f) => f.name)), 'after'];
  await sleep(1_000);
  for (const fault of faults) {
    load.setPhase(fault.name);
    await fault.inject();
    await sleep(fault.lastsMs);
    await fault.heal();
    healthy.set(fault.name, Math.max(healthy.get(fault.name) ?? 0, await timeToHealthy()));
    await sleep(1_000);
  }
  load.setPhase('after');
  await sleep(1_000);
  await load.stop();

  // Every committed write's event leaves the outbox.
  const drainedBy = Date.now() + 30_000;
  while (!(await outboxDrained()) && Date.now() < drainedBy) await sleep(250);
  expect(await outboxDrained()).toBe(true);

  const channelRows = await rows(ctx.run.databases.guilds, 'SELECT id, content FROM messages WHERE channel_id = $1', [channel]);
  const dmRows = await rows(ctx.run.databases.social, 'SELECT id, content FROM direct_messages WHERE conversation_id = $1', [
    conversation.body.id,
  ]);
  const stored = new Map<string, string[]>();
  for (const row of [...channelRows, ...dmRows]) stored.set(row.content, [...(stored.get(row.content) ?? []), row.id]);
  const events = new Map([
    ...(await eventCounts('GUILDS', 'guilds.message.created')),
    ...(await eventCounts('SOCIAL', 'social.dm.created')),
  ]);

  const table: PhaseCounts[] = phases.map((phase) => {
    const entries = load.ledger.filter((e) => e.phase === phase);
    // Failed answers are counted in the phase they came in; writes in the phase they started in.
    const statusCounts = new Map<number, number>();
    for (const { status: s } of load.ledger.flatMap((e) => e.answers).filter((a) => a.phase === phase)) {
      if (s < 200 || s >= 300) statusCounts.set(s, (statusCounts.get(s) ?? 0) + 1);
    }
    const ids = entries.flatMap((e) => stored.get(e.content) ?? []);
    return {
      phase,
      writes: entries.length,
      acknowledged: entries.filter((e) => e.id).length,
      retried: entries.filter((e) => e.answers.length > 1).length,
      failedAnswers: [...statusCounts].map(([s, n]) => `${s === 0 ? 'conn' : s}:${n}`).join(' ') || '-',
      gaveUp: entries.filter((e) => e.gaveUp).length,
      lost: entries.filter((e) => e.id && !(stored.get(e.content) ?? []).includes(e.id)).length,
      duplicated: entries.filter((e) => (stored.get(e.content) ?? []).length > 1).length,
      eventsMissing: ids.filter((id) => !events.has(id)).length,
      eventsDoubled: ids.filter((id) => (events.get(id) ?? 0) > 1).length,
      healthyAfterMs: healthy.has(phase) ? healthy.get(phase)! : '-',
    };
  });
  const sum = (k: keyof PhaseCounts) => table.reduce((n, r) => n + (typeof r[k] === 'number' ? (r[k] as number) : 0), 0);
  table.push({
    phase: 'total',
    writes: sum('writes'),
    acknowledged: sum('acknowledged'),
    retried: sum('retried'),
    failedAnswers: '',
    gaveUp: sum('gaveUp'),
    lost: sum('lost'),
    duplicated: sum('duplicated'),
    eventsMissing: sum('eventsMissing'),
    eventsDoubled: sum('eventsDoubled'),
    healthyAfterMs: Math.max(...healthy.values()),
  });
  printTable(table);

  const total = table.at(-1)!;
  expect(total.writes).toBeGreaterThan(50);
  expect({
    gaveUp: total.gaveUp,
    lost: total.lost,
    duplicated: total.duplicated,
    eventsMissing: total.eventsMissing,
    eventsDoubled: total.eventsDoubled,
  }).toEqual({
    gaveUp: 0,
    lost: 0,
    duplicated: 0,
    eventsMissing: 0,
    eventsDoubled: 0,
  });
  expect(total.acknowledged).toBe(total.writes);
  expect(Math.max(...healthy.values())).toBeLessThan(HEALTHY_WITHIN_MS);
}
