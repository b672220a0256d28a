import { connectBus, createLogger } from '@chat/kit';
import { describe, expect, inject, it } from 'vitest';
import { startIsolatedPlatform } from '../src/isolated-platform.ts';

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

describe('an isolated platform', () => {
  it('leaves no JetStream stream of its namespace on the shared NATS once stopped', async () => {
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
      await run.stop();
      stopped = true;
      expect(await streamsOf(run.namespace)).toEqual([]);
    } finally {
      if (!stopped) await run.stop();
    }
  }, 120_000);
});
