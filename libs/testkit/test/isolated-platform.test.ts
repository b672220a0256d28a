import { readFile } from 'node:fs/promises';
import { connectBus, createLogger } from '@chat/kit';
import { describe, expect, inject, it } from 'vitest';
import { startIsolatedPlatform } from '../src/isolated-platform.ts';
import { SERVICES, type ServiceProcess } from '../src/processes.ts';

const backing = inject('backing');

async function streamsOf(namespace: string): Promise<string[]> {
  const bus = await connectBus({
    url: backing.natsUrl,
    namespace,
    name: 'streams-probe',
    log: createLogger({ service: 't', level: 'silent' }),
  });
  try {
    const names: string[] = [];
    for await (const name of bus.jsm.streams.names()) if (name.startsWith(`${namespace}_`)) names.push(name);
    return names.sort();
  } finally {
    await bus.close();
  }
}

/** False once the process is gone and reaped (its 'exit' event has been emitted by then). */
function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('an isolated platform', () => {
  it('stops, a process a signal killed from outside included, and leaves no JetStream stream of its namespace on the shared NATS', async () => {
    const run = await startIsolatedPlatform({
      backing,
      label: 'tkstop',
      baseEnv: { PATH: process.env.PATH, HOME: process.env.HOME, NODE_ENV: 'test', LOG_LEVEL: 'warn' },
    });
    let stopped = false;
    try {
      // Every service creates its own stream once the bus is there (GATEWAY: the gateway's, and social follows it).
      await expect
        .poll(() => streamsOf(run.namespace), { timeout: 20_000, interval: 250 })
        .toEqual(['AUTH', 'GATEWAY', 'GUILDS', 'MEDIA', 'MUSIC', 'SOCIAL'].map((s) => `${run.namespace}_${s}`));
      // Killed by a signal, a process has a signal code and no exit code, and emits no 'exit' again:
      // stopping it must not wait for one (a bench stopped by `timeout` hung there).
      const music = run.platform.pid('music') as number;
      process.kill(music, 'SIGKILL');
      await expect.poll(() => isRunning(music), { timeout: 10_000, interval: 50 }).toBe(false);
      await run.stop();
      stopped = true;
      expect(await streamsOf(run.namespace)).toEqual([]);
    } finally {
      if (!stopped) await run.stop();
    }
  }, 120_000);
});

describe('a platform stopped by Ctrl-C', () => {
  it('lets every process finish the shutdown the SIGINT of the terminal began, without a second signal cutting it short', async () => {
    const run = await startIsolatedPlatform({
      backing,
      label: 'tkint',
      baseEnv: { PATH: process.env.PATH, HOME: process.env.HOME, NODE_ENV: 'test', LOG_LEVEL: 'info' },
    });
    const names: ServiceProcess[] = ['gateway', ...SERVICES];
    try {
      // What a terminal does: SIGINT to every process of its group, the launcher's children included.
      for (const name of names) process.kill(run.platform.pid(name) as number, 'SIGINT');
      await run.platform.stopAfterInterrupt();
      for (const name of names) {
        const log = await readFile(run.platform.logFile(name), 'utf8');
        expect({ name, shutdown: log.includes('"signal":"SIGINT"'), cutShort: /second SIG/.test(log) }).toEqual({
          name,
          shutdown: true,
          cutShort: false,
        });
      }
    } finally {
      await run.stop();
    }
  }, 120_000);
});
