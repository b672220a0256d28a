import { readFileSync } from 'node:fs';
import { describe, expect, inject, it } from 'vitest';

const { logDir } = inject('platform');
const PROCESSES = ['gateway', 'auth', 'guilds', 'social', 'media', 'music'];

function startLine(name: string): { node?: string } | undefined {
  const lines = readFileSync(`${logDir}/${name}.log`, 'utf8').split('\n');
  return lines
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { msg?: string; node?: string })
    .find((l) => l.msg === 'started');
}

describe('runtime', () => {
  it('runs every process on Node 24 or newer and says so in its first log lines', () => {
    for (const name of PROCESSES) {
      const line = startLine(name);
      expect(line, name).toBeDefined();
      expect(Number(line?.node?.match(/^v(\d+)\./)?.[1]), name).toBeGreaterThanOrEqual(24);
    }
  });

  it('runs the test workers on the same Node', () => {
    expect(Number(process.versions.node.split('.')[0])).toBeGreaterThanOrEqual(24);
  });
});
