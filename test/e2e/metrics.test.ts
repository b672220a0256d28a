import { createClient } from '@chat/client';
import { type IsolatedPlatform, type ServiceProcess, startTcpProxy, type TcpProxy } from '@chat/testkit';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ownPlatform } from './helpers.ts';

// A platform of its own whose processes reach NATS through a proxy this test can cut: NATS becomes
// unreachable for this platform only, while the shared server keeps serving everyone else.
let run: IsolatedPlatform;
let nats: TcpProxy;
const PROCESSES: ServiceProcess[] = ['gateway', 'auth', 'guilds', 'social', 'media', 'music'];

beforeAll(async () => {
  const backing = inject('backing');
  const target = new URL(backing.natsUrl);
  nats = await startTcpProxy({ host: target.hostname, port: Number(target.port || 4222) });
  const natsUrl = { NATS_URL: nats.url('nats') };
  run = await ownPlatform('met', 'metrics', Object.fromEntries(PROCESSES.map((p) => [p, natsUrl])));
});

afterAll(async () => {
  await run?.stop();
  await nats?.close();
});

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The samples of one scrape, parsed from the Prometheus text format. */
async function scrape(process: ServiceProcess): Promise<{ types: Set<string>; samples: Sample[] }> {
  const res = await fetch(run.platform.metricsUrls[process]);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  const text = await res.text();
  const types = new Set([...text.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]!));
  const samples = [...text.matchAll(/^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/gm)].map((m) => ({
    name: m[1]!,
    labels: Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((l) => [l[1]!, l[2]!])),
    value: Number(m[3]),
  }));
  return { types, samples };
}

const value = (samples: Sample[], name: string, labels: Record<string, string> = {}) =>
  samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;

async function outbox(process: ServiceProcess) {
  const { samples } = await scrape(process);
  return { unsent: value(samples, 'outbox_unsent_events')!, age: value(samples, 'outbox_oldest_unsent_age_seconds')! };
}

/** Polls until `check` holds, with a deadline: the relay and the NATS client work on their own clocks. */
async function eventually<T>(read: () => Promise<T>, check: (value: T) => boolean, what: string, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const current = await read();
    if (check(current)) return current;
    if (Date.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(current)} after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** A client of the platform's gateway, signed up as a fresh user. */
async function signedUp(prefix: string) {
  const chat = createClient({ baseUrl: run.platform.urls.gateway, headers: { 'x-forwarded-for': '10.201.0.1' } });
  const username = `${prefix}_${crypto.randomUUID().slice(0, 8)}`;
  await chat.auth.register({ body: { username, email: `${username}@example.test`, password: 'metrics-pass' } });
  return chat;
}

describe('metrics', () => {
  it('are served by every process on its operator port, never through the gateway', async () => {
    const chat = await signedUp('met');
    expect((await chat.auth.me()).username).toMatch(/^met_/);

    for (const process of PROCESSES) {
      const { types } = await scrape(process);
      for (const name of [
        'http_request_duration_seconds',
        'nats_request_duration_seconds',
        'nats_request_failures_total',
        'process_cpu_seconds_total',
      ]) {
        expect(types.has(name), `${process} ${name}`).toBe(true);
      }
      if (process !== 'gateway') {
        for (const name of [
          'pg_pool_connections_in_use',
          'pg_pool_clients_waiting',
          'outbox_unsent_events',
          'outbox_oldest_unsent_age_seconds',
        ]) {
          expect(types.has(name), `${process} ${name}`).toBe(true);
        }
      }
    }

    const gateway = (await scrape('gateway')).samples;
    expect(value(gateway, 'rate_limit_decisions_total', { tier: 'auth', decision: 'allowed' })).toBeGreaterThanOrEqual(1);
    expect(value(gateway, 'rate_limit_decisions_total', { tier: 'general', decision: 'allowed' })).toBeGreaterThanOrEqual(1);
    expect(
      value(gateway, 'http_request_duration_seconds_count', { method: 'POST', route: '/v1/auth/register', status_code: '201' }),
    ).toBeGreaterThanOrEqual(1);
    const auth = (await scrape('auth')).samples;
    // By route pattern: the path's ids never become series of their own.
    expect(value(auth, 'http_request_duration_seconds_count', { method: 'GET', route: '/v1/users/@me', status_code: '200' })).toBe(1);
    // Guilds and social keep read-models of auth's users: their consumers report what waits for them.
    for (const process of ['guilds', 'social'] as const) {
      const consumers = (await scrape(process)).samples.filter((s) => s.name === 'jetstream_consumer_pending_messages');
      expect(consumers.length, process).toBeGreaterThan(0);
    }
    // The gateway proxies /v1 only: no path of it reaches a metrics endpoint.
    expect((await fetch(`${run.platform.urls.gateway}/metrics`)).status).toBe(404);
    expect((await fetch(`${run.platform.urls.gateway}/v1/metrics`)).status).toBe(404);
  });

  it("count the gateway's socket: connections, sessions, identifies, dispatches by name with their lag, resumes and invalid sessions", async () => {
    const [owner, watcher] = await Promise.all([signedUp('mso'), signedUp('msw')]);
    const server = await owner.servers.createServer({ body: { name: 'Socket metrics', isPublic: true } });
    await watcher.servers.joinServer({ params: { serverId: server.id } });
    const channel = (await owner.servers.listChannels({ params: { serverId: server.id } })).find((c) => c.channelType === 'text')!;
    const received: string[] = [];
    watcher.socket.on('MESSAGE_CREATE', (message) => received.push(message.id));
    const readies: string[] = [];
    watcher.socket.on('READY', (ready) => readies.push(ready.sessionId));
    const resumed: number[] = [];
    watcher.socket.on('RESUMED', (d) => resumed.push(d.replayed));
    const before = (await scrape('gateway')).samples;
    const counted = (samples: Sample[], name: string, labels: Record<string, string> = {}) => value(samples, name, labels) ?? 0;
    const grew = (samples: Sample[], name: string, labels: Record<string, string> = {}) =>
      counted(samples, name, labels) - counted(before, name, labels);

    try {
      await watcher.socket.connect();
      const posted = await owner.messages.sendMessage({ params: { channelId: channel.id }, body: { content: 'counted' } });
      await eventually(
        async () => received,
        (ids) => ids.includes(posted.id),
        'MESSAGE_CREATE on the socket',
      );
      const live = await scrape('gateway');
      for (const name of [
        'gateway_socket_connections',
        'gateway_socket_sessions',
        'gateway_socket_identifies_total',
        'gateway_socket_dispatches_total',
        'gateway_socket_dispatch_lag_seconds',
        'gateway_socket_resumes_total',
        'gateway_socket_invalid_sessions_total',
      ]) {
        expect(live.types.has(name), name).toBe(true);
      }
      // This platform's only socket.
      expect(value(live.samples, 'gateway_socket_connections')).toBe(1);
      expect(value(live.samples, 'gateway_socket_sessions')).toBe(1);
      expect(grew(live.samples, 'gateway_socket_identifies_total')).toBe(1);
      expect(grew(live.samples, 'gateway_socket_dispatches_total', { event: 'MESSAGE_CREATE' })).toBe(1);
      // Measured from the event's time on JetStream: at least the message's, and under a minute on any machine.
      expect(grew(live.samples, 'gateway_socket_dispatch_lag_seconds_count')).toBeGreaterThanOrEqual(1);
      const lagSum = grew(live.samples, 'gateway_socket_dispatch_lag_seconds_sum');
      expect(lagSum).toBeGreaterThan(0);
      expect(lagSum).toBeLessThan(60);
      expect(grew(live.samples, 'gateway_socket_dispatch_lag_seconds_bucket', { le: '+Inf' })).toBe(
        grew(live.samples, 'gateway_socket_dispatch_lag_seconds_count'),
      );

      watcher.socket.reconnect();
      await eventually(
        async () => resumed,
        (r) => r.length === 1,
        'RESUMED after a reconnect',
      );
      // A session the gateway does not know: INVALID_SESSION, then a new IDENTIFY.
      watcher.socket.sessionId = crypto.randomUUID();
      watcher.socket.reconnect();
      await eventually(
        async () => readies,
        (r) => r.length === 2,
        'a second READY after INVALID_SESSION',
      );
      const after = (await scrape('gateway')).samples;
      expect(grew(after, 'gateway_socket_resumes_total')).toBe(1);
      expect(grew(after, 'gateway_socket_invalid_sessions_total', { reason: 'unknown' })).toBe(1);
      expect(grew(after, 'gateway_socket_identifies_total')).toBe(2);
      expect(grew(after, 'gateway_socket_dispatches_total', { event: 'RESUMED' })).toBe(1);
    } finally {
      watcher.socket.close();
    }
    await eventually(
      async () => (await scrape('gateway')).samples,
      (samples) => value(samples, 'gateway_socket_connections') === 0 && value(samples, 'gateway_socket_sessions') === 0,
      'the gauges after the socket closed',
    );
  });

  it('show the outbox growing older while NATS is unreachable, and emptied once it is back', async () => {
    const chat = await signedUp('mob');
    await eventually(
      () => outbox('auth'),
      (o) => o.unsent === 0 && o.age === 0,
      'auth outbox before the cut',
    );

    nats.cut();
    try {
      const updated = await chat.auth.updateMe({ body: { displayName: 'Written while NATS is away' } });
      expect(updated.displayName).toBe('Written while NATS is away');
      const first = await eventually(
        () => outbox('auth'),
        (o) => o.unsent >= 1 && o.age > 0,
        'auth outbox while NATS is cut',
      );
      const later = await eventually(
        () => outbox('auth'),
        (o) => o.age > first.age + 0.5,
        'auth outbox age while NATS is cut',
      );
      expect(later.unsent).toBeGreaterThanOrEqual(first.unsent);
    } finally {
      nats.restore();
    }

    await eventually(
      () => outbox('auth'),
      (o) => o.unsent === 0 && o.age === 0,
      'auth outbox after NATS is back',
      30_000,
    );
    // And the event reached its consumers: nothing waits for guilds' and social's read-models.
    for (const process of ['guilds', 'social'] as const) {
      await eventually(
        async () =>
          (await scrape(process)).samples.filter((s) => s.name.startsWith('jetstream_consumer_') && s.name.endsWith('pending_messages')),
        (pending) => pending.length > 0 && pending.every((s) => s.value === 0),
        `${process} consumers after NATS is back`,
        // A pull that was in flight when the connection dropped holds its event until ack_wait (30 s) ends.
        45_000,
      );
    }
  }, 120_000);
});
