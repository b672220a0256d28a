import { Writable } from 'node:stream';
import { createHttpApp, createLogger } from '@chat/kit';
import { describe, expect, it } from 'vitest';

describe('request logs', () => {
  it('never carry a webhook token, the secret in the execution url', async () => {
    const lines: string[] = [];
    const destination = new Writable({
      write(chunk, _encoding, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    const app = createHttpApp({ log: createLogger({ service: 'guilds', level: 'info', destination }) });
    app.post('/v1/webhooks/:id/:token', async () => ({}));
    await app.inject({
      method: 'POST',
      url: '/v1/webhooks/0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b/s3cr3t-token-value?wait=true',
      payload: {},
    });
    await app.close();
    const text = lines.join('');
    expect(text).toContain('/v1/webhooks/0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b/[redacted]?wait=true');
    expect(text).not.toContain('s3cr3t-token-value');
  });
});
