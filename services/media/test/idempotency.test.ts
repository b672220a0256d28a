import { randomBytes, randomUUID } from 'node:crypto';
import { PassThrough } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import type { ObjectStore } from '../src/db/storage.ts';
import { createMediaHarness, type MediaHarness, multipart, oneFile, sha256 } from './harness.ts';

/** Counts the uploads that reached the store, so a test knows when every one of them is streaming. */
let puts = 0;
let onPut: () => void = () => {};
const watched = (store: ObjectStore): ObjectStore => ({
  ...store,
  put: (key, source, contentTypeOf) => {
    puts++;
    onPut();
    return store.put(key, source, contentTypeOf);
  },
});
const h = await createMediaHarness({ storage: watched });
afterAll(() => h.close());

async function upload(
  harness: MediaHarness,
  user: string,
  body: { payload: Buffer | PassThrough; headers: Record<string, string> },
  key?: string,
) {
  return harness.app.inject({
    method: 'POST',
    url: '/v1/media',
    headers: { ...(await harness.auth(user)), ...body.headers, ...(key ? { 'idempotency-key': key } : {}) },
    payload: body.payload,
  });
}

/** A body whose multipart head and first bytes are sent at once and whose rest waits for `finish()`. */
function slowBody(data: Buffer, filename: string) {
  const { payload, headers } = oneFile(data, filename);
  const split = payload.indexOf(data) + 16;
  const stream = new PassThrough();
  stream.write(payload.subarray(0, split));
  return { payload: stream, headers, finish: () => stream.end(payload.subarray(split)) };
}

/** Resolves once `count` more uploads have begun streaming into the store. */
function putsReach(count: number): Promise<void> {
  const target = puts + count;
  return new Promise((resolve) => {
    onPut = () => {
      if (puts >= target) resolve();
    };
  });
}

const named = async (harness: MediaHarness, filename: string) => (await harness.rows()).filter((r) => r.filename === filename);

describe('Idempotency-Key on uploads', () => {
  it('answers a retried upload with the first record and stores one; another length with the key is 422', async () => {
    const user = randomUUID();
    const key = randomUUID();
    const file = oneFile(randomBytes(2048), 'retried.bin');
    const first = await upload(h, user, file, key);
    const objects = (await h.objectKeys()).length;
    const retry = await upload(h, user, file, key);
    expect(first.statusCode).toBe(201);
    expect(retry.statusCode).toBe(201);
    expect(retry.payload).toBe(first.payload);
    expect(retry.headers['idempotent-replayed']).toBe('true');
    expect(await named(h, 'retried.bin')).toHaveLength(1);
    const other = await upload(h, user, oneFile(randomBytes(4096), 'retried.bin'), key);
    expect(other.statusCode).toBe(422);
    expect(other.json()).toEqual({ error: 'This Idempotency-Key was already used for a different request' });
    expect(await named(h, 'retried.bin')).toHaveLength(1);
    expect(await h.objectKeys()).toHaveLength(objects);
  });

  it('answers 422 for another file of the same size under the key, and keeps the first', async () => {
    const user = randomUUID();
    const key = randomUUID();
    const original = randomBytes(2048);
    const first = await upload(h, user, oneFile(original, 'same-size.bin'), key);
    const other = await upload(h, user, oneFile(randomBytes(2048), 'same-size.bin'), key);
    expect(first.statusCode).toBe(201);
    expect(other.statusCode).toBe(422);
    expect(other.json()).toEqual({ error: 'This Idempotency-Key was already used for a different request' });
    const rows = await named(h, 'same-size.bin');
    expect(rows).toEqual([expect.objectContaining({ id: first.json().id, sha256: sha256(original), size: 2048 })]);
    expect(await h.objectBytes(rows[0].storage_key)).toEqual(original);
  });

  it('replays a retry whose body is framed anew (another multipart boundary, another field)', async () => {
    const user = randomUUID();
    const key = randomUUID();
    const data = randomBytes(2048);
    const first = await upload(h, user, oneFile(data, 'reframed.bin'), key);
    const reframed = multipart([
      { name: 'note', data: 'sent again' },
      { name: 'file', filename: 'reframed.bin', contentType: 'application/octet-stream', data },
    ]);
    const retry = await upload(h, user, reframed, key);
    expect(retry.statusCode).toBe(201);
    expect(retry.json()).toEqual(first.json());
    expect(await named(h, 'reframed.bin')).toHaveLength(1);
  });

  it('applies two concurrent uploads with one key once: the later one is answered as a retry and its bytes go', async () => {
    const user = randomUUID();
    const key = randomUUID();
    const data = randomBytes(2048);
    const objects = (await h.objectKeys()).length;
    const bodies = [slowBody(data, 'together.bin'), slowBody(data, 'together.bin')];
    const streaming = putsReach(2);
    const answers = bodies.map((body) => upload(h, user, body, key));
    // Both stream at once; should one be answered without streaming, that is the outcome to check.
    await Promise.race([streaming, Promise.any(answers)]);
    for (const body of bodies) body.finish();
    const [a, b] = await Promise.all(answers);
    expect([a?.statusCode, b?.statusCode]).toEqual([201, 201]);
    expect(b?.json()).toEqual(a?.json());
    expect([a?.headers['idempotent-replayed'], b?.headers['idempotent-replayed']].filter(Boolean)).toEqual(['true']);
    expect(await named(h, 'together.bin')).toHaveLength(1);
    expect(await h.objectKeys()).toHaveLength(objects + 1);
  });
});

describe('slow uploads with an Idempotency-Key', () => {
  it('hold no database connection while their bodies stream in: with every connection count of them streaming, a file is served at once', async () => {
    const poolSize = 3;
    const small = await createMediaHarness({ poolSize, storage: watched });
    try {
      const user = randomUUID();
      const served = await upload(small, user, oneFile('still served', 'served.txt'));
      expect(served.statusCode).toBe(201);
      const bodies = Array.from({ length: poolSize }, (_, i) => slowBody(randomBytes(4096), `slow-${i}.bin`));
      const streaming = putsReach(poolSize);
      const uploads = bodies.map((body, i) => upload(small, user, body, `slow-${i}`));
      await streaming;

      const res = await small.app.inject({ method: 'GET', url: new URL(served.json().url).pathname });
      for (const body of bodies) body.finish();
      const answers = await Promise.all(uploads);

      expect(res.statusCode).toBe(200);
      expect(res.payload).toBe('still served');
      expect(answers.map((r) => r.statusCode)).toEqual([201, 201, 201]);
      expect((await small.rows()).map((r) => r.filename).sort()).toEqual(['served.txt', 'slow-0.bin', 'slow-1.bin', 'slow-2.bin']);
    } finally {
      await small.close();
    }
  });
});
