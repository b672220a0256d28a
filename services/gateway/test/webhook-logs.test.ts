import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { createLogger } from '@chat/kit';
import { afterAll, describe, expect, it } from 'vitest';
import { createTestIssuer, startGateway } from './helpers.ts';

// A service that runs every webhook (204), and a gateway logging at info into memory.
const upstream = createServer((req, res) => {
  req.resume();
  req.once('end', () => res.writeHead(204).end());
});
await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
const lines: string[] = [];
const destination = new Writable({
  write(chunk, _encoding, done) {
    lines.push(chunk.toString());
    done();
  },
});
const gateway = await startGateway({
  upstreamUrl: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`,
  keys: (await createTestIssuer()).keys,
  log: createLogger({ service: 'gateway', level: 'info', destination }),
});
afterAll(async () => {
  await gateway.close();
  upstream.close();
});

describe('a webhook token in the path', () => {
  it('is in no log line of its execution, in any spelling of the path, forwarded or not', async () => {
    const id = crypto.randomUUID();
    const token = `tok${crypto.randomUUID().replaceAll('-', '')}`;
    const spellings = [
      `/v1/webhooks/${id}/${token}`,
      `/v1/%77ebhooks/${id}/${token}`,
      `//v1/webhooks/${id}/${token}`,
      `/v1//webhooks/${id}/${token}`,
      `/v1/webhooks/${id}/${token};x`,
    ];
    const statuses: number[] = [];
    for (const url of spellings) {
      const res = await gateway.app.inject({
        method: 'POST',
        url,
        headers: { 'content-type': 'application/json' },
        payload: '{"content":"a"}',
      });
      statuses.push(res.statusCode);
    }
    expect(statuses[0]).toBe(204);
    const logged = lines.join('');
    expect(logged).toContain('[redacted]');
    expect(logged.split('\n').filter((l) => l.includes(token))).toEqual([]);
  });
});
