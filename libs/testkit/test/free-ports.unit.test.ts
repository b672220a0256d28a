import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { freePorts } from '../src/isolated-platform.ts';

describe('freePorts', () => {
  it('hands out distinct ports that nothing listens on', async () => {
    const ports = await freePorts(200);
    expect(new Set(ports).size).toBe(200);
    // Each one can be taken right away.
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.on('error', reject);
      server.listen(ports[0], '127.0.0.1', () => resolve());
    });
    await new Promise((resolve) => server.close(resolve));
  });
});
