import { randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import { MediaFileRpc } from '@chat/contracts';
import { requestRpc } from '@chat/kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dsf, silentWav } from './audio.ts';
import { createMediaHarness, type MediaHarness, oneFile } from './harness.ts';

let h: MediaHarness;
const owner = randomUUID();
/** Every stream the app read from the store, to see that none is left open. */
const reads: Readable[] = [];
beforeAll(async () => {
  h = await createMediaHarness({
    storage: (store) => ({
      ...store,
      read: async (key, range) => {
        const bytes = await store.read(key, range);
        reads.push(bytes);
        return bytes;
      },
    }),
  });
});
afterAll(() => h.close());

async function upload(data: Buffer, filename: string) {
  const body = oneFile(data, filename);
  const res = await h.app.inject({
    method: 'POST',
    url: '/v1/media',
    headers: { ...(await h.auth(owner)), ...body.headers },
    payload: body.payload,
  });
  expect(res.statusCode).toBe(201);
  return res.json() as { id: string; contentType: string };
}

describe('audio length read at upload', () => {
  it('reads the length of an uploaded audio file and keeps it in the record and the RPC answer', async () => {
    const file = await upload(silentWav(3), 'three.wav');
    expect(file.contentType).toMatch(/^audio\//);
    const record = await h.app.inject({ method: 'GET', url: `/v1/media/${file.id}`, headers: await h.auth(owner) });
    expect(record.json().durationSeconds).toBeCloseTo(3, 2);
    const reply = await requestRpc(h.runtime.bus, MediaFileRpc, { id: file.id });
    expect(reply.durationSeconds).toBeCloseTo(3, 2);
    const { rows } = await h.runtime.pool.query('SELECT duration_seconds FROM media_files WHERE id = $1', [file.id]);
    expect(rows[0].duration_seconds).toBeCloseTo(3, 2);
  });

  it('keeps no length for a file that is not audio', async () => {
    const file = await upload(Buffer.from('just some text'), 'notes.txt');
    const record = await h.app.inject({ method: 'GET', url: `/v1/media/${file.id}`, headers: await h.auth(owner) });
    expect(record.json().durationSeconds).toBeNull();
  });

  it.each([
    ['a negative length (sampling frequency -1)', dsf(1000n, -1)],
    ['a length of 2^62 seconds', dsf(2n ** 62n, 1)],
    ['a length one second past a day', dsf(86_401n, 1)],
  ])('records an audio file whose header claims %s with its length unknown: 201, not a 500', async (_what, bytes) => {
    const file = await upload(bytes, 'crafted.dsf');
    expect(file.contentType).toBe('audio/x-dsf');
    const record = await h.app.inject({ method: 'GET', url: `/v1/media/${file.id}`, headers: await h.auth(owner) });
    expect(record.json().durationSeconds).toBeNull();
    const { rows } = await h.runtime.pool.query('SELECT duration_seconds FROM media_files WHERE id = $1', [file.id]);
    expect(rows).toEqual([{ duration_seconds: null }]);
  });

  it('closes the stored file it read when the audio parser gives up halfway (a malformed header)', async () => {
    const wav = silentWav(3);
    wav.writeUInt32LE(3, 16); // a fmt chunk of 3 bytes, which music-metadata reads past
    const before = reads.length;
    const file = await upload(wav, 'broken.wav');
    expect(file.contentType).toMatch(/^audio\//);
    const record = await h.app.inject({ method: 'GET', url: `/v1/media/${file.id}`, headers: await h.auth(owner) });
    expect(record.json().durationSeconds).toBeNull();
    const read = reads.slice(before);
    expect(read).toHaveLength(1);
    expect(read.map((bytes) => bytes.destroyed)).toEqual([true]);
  });

  it('keeps a length of exactly a day, the longest track music takes', async () => {
    const file = await upload(dsf(86_400n, 1), 'day.dsf');
    const reply = await requestRpc(h.runtime.bus, MediaFileRpc, { id: file.id });
    expect(reply.durationSeconds).toBe(86_400);
  });
});
