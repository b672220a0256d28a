import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { createMediaHarness, oneFile } from './harness.ts';

const h = await createMediaHarness();
afterAll(() => h.close());

describe('Idempotency-Key on uploads', () => {
  it('answers a retried upload with the first record and stores one; another length with the key is 422', async () => {
    const user = randomUUID();
    const key = randomUUID();
    const file = oneFile(randomBytes(2048), 'retried.bin');
    const send = async (body: { payload: Buffer; headers: Record<string, string> }) =>
      h.app.inject({
        method: 'POST',
        url: '/v1/media',
        headers: { ...(await h.auth(user)), ...body.headers, 'idempotency-key': key },
        payload: body.payload,
      });
    const first = await send(file);
    const retry = await send(file);
    expect(first.statusCode).toBe(201);
    expect(retry.statusCode).toBe(201);
    expect(retry.payload).toBe(first.payload);
    expect((await h.rows()).filter((r) => r.filename === 'retried.bin')).toHaveLength(1);
    const other = await send(oneFile(randomBytes(4096), 'retried.bin'));
    expect(other.statusCode).toBe(422);
    expect(other.json()).toEqual({ error: 'This Idempotency-Key was already used for a different request' });
    expect((await h.rows()).filter((r) => r.filename === 'retried.bin')).toHaveLength(1);
  });
});
