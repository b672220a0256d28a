import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/** What the traced platform exported during the run. */
export interface TraceSinkFigures {
  /** OTLP/HTTP export requests received (each a batch of spans). */
  exports: number;
  bytes: number;
}

/**
 * An OTLP/HTTP traces endpoint in the bench process that accepts every export and keeps only its
 * count and size: the traced platform pays for recording, batching, encoding and sending its spans,
 * as it would with a real collector, while the bench spends no CPU decoding them.
 */
export async function startTraceSink(): Promise<{ url: string; figures(): TraceSinkFigures; close(): Promise<void> }> {
  const figures: TraceSinkFigures = { exports: 0, bytes: 0 };
  const server = createServer((req, res) => {
    req.on('data', (chunk: Buffer) => {
      figures.bytes += chunk.length;
    });
    req.on('end', () => {
      figures.exports += 1;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1/traces`,
    figures: () => ({ ...figures }),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
