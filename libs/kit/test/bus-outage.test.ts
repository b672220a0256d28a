import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestRuntime, startTcpProxy, type TcpProxy } from '@chat/testkit';
import { afterAll, afterEach, describe, expect, inject, it } from 'vitest';
import { type Bus, connectBackoffMs, openBus } from '../src/bus.ts';
import { withTx } from '../src/db.ts';
import { AppError } from '../src/errors.ts';
import { consumeEvents, enqueueEvent, type Relay, startOutboxRelay } from '../src/events.ts';
import { captureLogs } from './logs.ts';

// A process whose bus link goes through a proxy this file owns: cutting it never touches the NATS
// that other tests share. The runtime's own relay is stopped so that only the relay under test
// publishes this database's outbox.
const STREAM = { name: 'OUTAGE', subjects: ['outage.>'] };
const migrationsDir = await mkdtemp(join(tmpdir(), 'kit-outage-'));
await writeFile(join(migrationsDir, '0001_none.sql'), 'SELECT 1;');
const backing = inject('backing');
const runtime = await createTestRuntime({ service: 'kitoutage', migrationsDir, stream: STREAM, backing });
await runtime.relay.stop();
const nats = new URL(backing.natsUrl);
const { log } = captureLogs('silent');
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
afterAll(() => runtime.close());

async function proxiedBus(): Promise<{ proxy: TcpProxy; bus: Bus }> {
  const proxy = await startTcpProxy({ host: nats.hostname, port: Number(nats.port) });
  const bus = openBus({ url: proxy.url('nats'), namespace: runtime.namespace, name: 'outage-test', log });
  cleanups.push(
    () => proxy.close(),
    () => bus.close(),
  );
  return { proxy, bus };
}

function relayOn(bus: Bus): Relay {
  const relay = startOutboxRelay({ pool: runtime.pool, bus, log, stream: STREAM, pollMs: 100 });
  cleanups.push(() => relay.stop());
  return relay;
}

const commitEvent = (data: unknown) => withTx(runtime.pool, (tx) => enqueueEvent(tx, 'outage.thing.happened', data));

/** Resolves with the time each listed event id is first seen on the subject (the observer uses the shared NATS directly). */
function watchEvents() {
  const seen = new Map<string, number>();
  const waiters = new Map<string, () => void>();
  const sub = runtime.bus.nc.subscribe(runtime.bus.subject('outage.>'), {
    callback: (_err, msg) => {
      const id = (msg.json() as { id: string }).id;
      if (!seen.has(id)) seen.set(id, performance.now());
      waiters.get(id)?.();
    },
  });
  cleanups.push(async () => sub.unsubscribe());
  return {
    arrival: (id: string) =>
      new Promise<number>((resolve) => {
        if (seen.has(id)) return resolve(seen.get(id) as number);
        waiters.set(id, () => resolve(seen.get(id) as number));
      }),
  };
}

const nextConnection = (bus: Bus, up: boolean) =>
  new Promise<number>((resolve) => {
    const off = bus.onConnection((now) => {
      if (now !== up) return;
      off();
      resolve(performance.now());
    });
  });

describe('a process started while the bus is unreachable', () => {
  it('answers 503 for bus work, keeps writes in the outbox, and delivers them and starts its consumer when the bus arrives', async () => {
    const { proxy, bus } = await proxiedBus();
    proxy.cut();
    const watcher = watchEvents();
    expect(bus.connected).toBe(false);
    expect(() => bus.nc).toThrow(AppError);
    relayOn(bus);
    const handled: string[] = [];
    const consumer = await consumeEvents({
      bus,
      pool: runtime.pool,
      log,
      stream: STREAM,
      spec: { stream: STREAM.name, durable: 'outage-consumer' },
      handle: async (event) => void handled.push(event.id),
    });
    cleanups.push(() => consumer.stop());
    // The write commits while the bus is away; its event waits in the outbox.
    const id = await commitEvent({ n: 1 });
    const { rows } = await runtime.pool.query('SELECT sent_at FROM outbox WHERE id = $1', [id]);
    expect(rows).toEqual([{ sent_at: null }]);
    expect(handled).toEqual([]);

    const connected = nextConnection(bus, true);
    proxy.restore();
    await connected;
    await watcher.arrival(id);
    await expect.poll(() => handled, { timeout: 10_000 }).toEqual([id]);
    const sent = await runtime.pool.query('SELECT sent_at FROM outbox WHERE id = $1', [id]);
    expect(sent.rows[0].sent_at).not.toBeNull();
  }, 30_000);

  it('waits longer between attempts at its first connection, up to 10 s', () => {
    expect([0, 1, 2, 3, 6, 20].map((attempt) => connectBackoffMs(attempt, 0.5))).toEqual([250, 500, 1_000, 2_000, 10_000, 10_000]);
    expect(connectBackoffMs(2, 0)).toBe(800);
    expect(connectBackoffMs(2, 1)).toBe(1_200);
  });
});

/** Restores the link and answers how long after the reconnect the event `id` was seen on the bus. */
async function msFromReconnectTo(id: string, link: { proxy: TcpProxy; bus: Bus; watcher: ReturnType<typeof watchEvents> }) {
  const up = nextConnection(link.bus, true);
  link.proxy.restore();
  const reconnectedAt = await up;
  return (await link.watcher.arrival(id)) - reconnectedAt;
}

describe('the relay after a reconnect', () => {
  it('sends a batch the disconnect cut off within a second of the reconnect, not after its publish timeout', async () => {
    const { proxy, bus } = await proxiedBus();
    await bus.ready;
    const watcher = watchEvents();
    relayOn(bus);
    const first = await commitEvent({ n: 1 });
    await watcher.arrival(first);

    // The publish goes into a stalled link (its ack will never come), then the link drops.
    proxy.stall();
    const id = await commitEvent({ n: 2 });
    await expect
      .poll(() => runtime.pool.query('SELECT 1 FROM outbox WHERE id = $1 AND sent_at IS NULL', [id]).then((r) => r.rowCount))
      .toBe(1);
    const down = nextConnection(bus, false);
    proxy.cut();
    await down;
    expect(await msFromReconnectTo(id, { proxy, bus, watcher })).toBeLessThan(1_000);
  }, 30_000);

  it('sends a batch whose rows were read while the link dropped within a second of the reconnect, not after its publish timeout', async () => {
    const { proxy, bus } = await proxiedBus();
    await bus.ready;
    const watcher = watchEvents();
    relayOn(bus);
    await watcher.arrival(await commitEvent({ n: 1 }));

    // Every connection of the pool is taken: the relay's next batch waits for one, past its check of the link.
    const held = await Promise.all(Array.from({ length: runtime.pool.options.max }, () => runtime.pool.connect()));
    const writer = held[0]!;
    await writer.query('BEGIN');
    const id = await enqueueEvent(writer, 'outage.thing.happened', { n: 2 });
    await writer.query('COMMIT');
    await expect.poll(() => runtime.pool.waitingCount, { timeout: 5_000 }).toBeGreaterThan(0);
    const down = nextConnection(bus, false);
    proxy.cut();
    await down;
    for (const client of held) client.release();
    // The batch reads its rows and publishes while the link is down.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await msFromReconnectTo(id, { proxy, bus, watcher })).toBeLessThan(1_000);
  }, 30_000);
});

describe('a consumer that stops while an event is on its way to it', () => {
  it('still applies and acknowledges the event, rather than leaving it to be redelivered after the ack wait', async () => {
    const { proxy, bus } = await proxiedBus();
    await bus.ready;
    const spec = { stream: STREAM.name, durable: 'outage-stopping', deliverNewOnly: true };
    const applied: string[] = [];
    const consumer = await consumeEvents({
      bus,
      pool: runtime.pool,
      log,
      stream: STREAM,
      spec,
      handle: async (event) => void applied.push(event.id),
    });
    const durable = () => runtime.bus.jsm.consumers.info(runtime.bus.name(STREAM.name), runtime.bus.name(spec.durable));

    // The server sends the event to the waiting pull, and the link holds it while the consumer stops.
    proxy.hold();
    const event = { id: crypto.randomUUID(), subject: 'outage.thing.happened', occurredAt: new Date().toISOString(), data: {} };
    const { seq } = await runtime.bus.js.publish(runtime.bus.subject(event.subject), JSON.stringify(event), { msgID: event.id });
    await expect.poll(async () => (await durable()).delivered.stream_seq).toBe(seq);
    const stopped = consumer.stop();
    // Long enough for the server to read the unsubscribe, which the hold lets through.
    await new Promise((resolve) => setTimeout(resolve, 300));
    proxy.restore();
    await stopped;

    expect(applied).toEqual([event.id]);
    await expect.poll(async () => (await durable()).num_ack_pending).toBe(0);
  }, 15_000);

  it('still stops, within seconds, when the link to the server is silent', async () => {
    const { proxy, bus } = await proxiedBus();
    await bus.ready;
    const spec = { stream: STREAM.name, durable: 'outage-stopping-silent', deliverNewOnly: true };
    const consumer = await consumeEvents({ bus, pool: runtime.pool, log, stream: STREAM, spec, handle: async () => {} });
    proxy.stall();
    const started = performance.now();
    await consumer.stop();
    const stopMs = performance.now() - started;
    proxy.restore();
    expect(stopMs).toBeLessThan(5_000);
  }, 15_000);
});
