import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connectBus, createLogger, enqueueEvent, loadConfig, withTx } from '@chat/kit';
import pg from 'pg';
import { describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { createTestDatabase } from '../src/database.ts';
import { createTestRuntime } from '../src/runtime.ts';

const backing = inject('backing');
const STREAM = { name: 'TKIT', subjects: ['tkit.>'] };

async function databaseExists(name: string): Promise<boolean> {
  const admin = new pg.Client({ connectionString: backing.postgresUrl });
  await admin.connect();
  try {
    return (await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])).rowCount === 1;
  } finally {
    await admin.end();
  }
}

describe('createTestDatabase', () => {
  it('creates a fresh database per call, even from an awkward label, and drops it', async () => {
    const a = await createTestDatabase(backing.postgresUrl, 'my-service');
    const b = await createTestDatabase(backing.postgresUrl, 'my-service');
    expect(a.name).not.toBe(b.name);
    expect(await databaseExists(a.name)).toBe(true);
    await a.drop();
    await b.drop();
    expect(await databaseExists(a.name)).toBe(false);
  });
});

describe('createTestRuntime', () => {
  it('gives a migrated database, a namespaced stream with a relay, and cleans both up', async () => {
    const runtime = await createTestRuntime({
      service: 'tkit',
      migrationsDir: await mkdtemp(join(tmpdir(), 'tkit-')),
      stream: STREAM,
      backing,
    });
    const databaseName = new URL(runtime.databaseUrl).pathname.slice(1);
    const config = loadConfig(z.object({ DATABASE_URL: z.string(), BUS_NAMESPACE: z.string(), NODE_ENV: z.literal('test') }), runtime.env);
    expect(config.BUS_NAMESPACE).toBe(runtime.namespace);

    const id = await withTx(runtime.pool, (tx) => enqueueEvent(tx, 'tkit.thing.happened', { ok: true }));
    await runtime.relay.flush();
    const streamName = runtime.bus.name(STREAM.name);
    const stored = await runtime.bus.jsm.streams.getMessage(streamName, { seq: 1 });
    expect(stored?.header.get('Nats-Msg-Id')).toBe(id);

    await runtime.close();
    expect(await databaseExists(databaseName)).toBe(false);
    const observer = await connectBus({
      url: backing.natsUrl,
      namespace: '',
      name: 'observer',
      log: createLogger({ service: 't', level: 'silent' }),
    });
    try {
      await expect(observer.jsm.streams.info(streamName)).rejects.toThrow();
    } finally {
      await observer.nc.drain();
    }
  });
});
