import { type ChildProcess, spawn } from 'node:child_process';
import { connectBus } from '@chat/kit';
import {
  buildBundles,
  bundlePath,
  createTestDatabase,
  deleteNamespaceStreams,
  freePort,
  startTcpProxy,
  testNamespace,
} from '@chat/testkit';
import pg from 'pg';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { captureLogs } from './logs.ts';

// These tests start a real service (music, the smallest) as its own process, as production does:
// its bundle on plain Node.
const ROOT = new URL('../../../', import.meta.url).pathname;
await buildBundles(['music']);
const backing = inject('backing');
const children: ChildProcess[] = [];
afterAll(() => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
});

function startMusic(env: Record<string, string>, args: string[] = []) {
  const child = spawn(process.execPath, [bundlePath('music'), ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, LOG_LEVEL: 'info', METRICS_PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk) => {
    stdout += chunk;
  });
  child.stderr?.on('data', (chunk) => {
    stderr += chunk;
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, exited, output: () => ({ stdout, stderr }) };
}

async function waitUntilLive(url: string, exited: Promise<unknown>, status = 'ready') {
  let gone = false;
  void exited.then(() => {
    gone = true;
  });
  const deadline = Date.now() + 45_000;
  while (Date.now() < deadline && !gone) {
    const ok = await fetch(`${url}/health/ready`, { signal: AbortSignal.timeout(1_000) }).then(
      async (r) => r.ok && ((await r.json()) as { status: string }).status === status,
      () => false,
    );
    if (ok) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`service at ${url} never became ready`);
}

describe('a service process', () => {
  it('refuses to start with a bad configuration and names every bad variable', async () => {
    const music = startMusic({ PORT: 'abc', DATABASE_URL: 'mysql://nope', LOG_LEVEL: 'chatty' });
    const code = await music.exited;
    const { stderr } = music.output();
    expect(code).toBe(78);
    expect(stderr).toMatch(/^music: Invalid configuration:/);
    for (const name of ['PORT', 'DATABASE_URL', 'LOG_LEVEL']) expect(stderr).toContain(`  - ${name}: `);
    expect(stderr).not.toContain('mysql://nope');
  }, 30_000);

  it('exits 0 on SIGTERM within its grace period, with its port closed', async () => {
    const db = await createTestDatabase(backing.postgresUrl, 'musicproc');
    const namespace = testNamespace('musicproc');
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const music = startMusic({
      PORT: String(port),
      DATABASE_URL: db.url,
      NATS_URL: backing.natsUrl,
      BUS_NAMESPACE: namespace,
      SHUTDOWN_GRACE_MS: '5000',
    });
    try {
      await waitUntilLive(url, music.exited);
      const stoppedAt = Date.now();
      music.child.kill('SIGTERM');
      expect(await music.exited).toBe(0);
      expect(Date.now() - stoppedAt).toBeLessThan(5_000);
      await expect(fetch(`${url}/health/live`, { signal: AbortSignal.timeout(1_000) })).rejects.toThrow();
      const logged = music
        .output()
        .stdout.split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as { msg: string; signal?: string });
      expect(logged.some((entry) => entry.msg === 'shutting down' && entry.signal === 'SIGTERM')).toBe(true);
    } finally {
      const bus = await connectBus({ url: backing.natsUrl, namespace, name: 'cleanup', log: captureLogs('silent').log });
      await deleteNamespaceStreams(bus, namespace);
      await bus.close();
      await db.drop();
    }
  }, 60_000);

  it('starts and serves HTTP while NATS is unreachable (ready, degraded), and becomes ready when the bus arrives', async () => {
    const db = await createTestDatabase(backing.postgresUrl, 'musicnobus');
    const namespace = testNamespace('musicnobus');
    const nats = new URL(backing.natsUrl);
    const proxy = await startTcpProxy({ host: nats.hostname, port: Number(nats.port) });
    proxy.cut();
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const music = startMusic({ PORT: String(port), DATABASE_URL: db.url, NATS_URL: proxy.url('nats'), BUS_NAMESPACE: namespace });
    try {
      await waitUntilLive(url, music.exited, 'degraded');
      const degraded = await fetch(`${url}/health/ready`);
      expect(degraded.status).toBe(200);
      expect(((await degraded.json()) as { checks: unknown }).checks).toEqual({ postgres: 'ok', nats: 'unavailable: not connected' });
      // Its routes answer meanwhile.
      const play = await fetch(`${url}/v1/music/play`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
      expect(play.status).toBe(401);
      expect(await play.json()).toEqual({ error: 'Missing bearer token' });
      proxy.restore();
      await waitUntilLive(url, music.exited, 'ready');
      expect(music.child.exitCode).toBeNull();
    } finally {
      music.child.kill('SIGTERM');
      await music.exited;
      await proxy.close();
      const bus = await connectBus({ url: backing.natsUrl, namespace, name: 'cleanup', log: captureLogs('silent').log });
      await deleteNamespaceStreams(bus, namespace);
      await bus.close();
      await db.drop();
    }
  }, 60_000);

  it('with --migrate-only applies its migrations and exits 0 without NATS or a port', async () => {
    const db = await createTestDatabase(backing.postgresUrl, 'musicmigrate');
    try {
      // Nothing listens on the NATS URL: the init container must not need the bus.
      const music = startMusic({ DATABASE_URL: db.url, NATS_URL: `nats://127.0.0.1:${await freePort()}`, PORT: '1' }, ['--migrate-only']);
      expect(await music.exited).toBe(0);
      const client = new pg.Client({ connectionString: db.url });
      await client.connect();
      try {
        const { rows } = await client.query<{ id: string }>('SELECT id FROM schema_migrations ORDER BY id');
        expect(rows.map((r) => r.id)).toEqual(
          expect.arrayContaining(['kit/0001_outbox_inbox.sql', expect.stringMatching(/^service\/0001_/)]),
        );
        const tables = await client.query("SELECT 1 FROM information_schema.tables WHERE table_name = 'outbox'");
        expect(tables.rowCount).toBe(1);
      } finally {
        await client.end();
      }
      const logged = music
        .output()
        .stdout.split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as { msg: string });
      expect(logged.map((entry) => entry.msg)).toContain('migrations applied; exiting (--migrate-only)');
      expect(logged.map((entry) => entry.msg)).not.toContain('started');
    } finally {
      await db.drop();
    }
  }, 60_000);
});
