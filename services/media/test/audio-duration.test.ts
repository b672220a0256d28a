import { randomUUID } from 'node:crypto';
import { MEDIA_RPC, MediaFileReply } from '@chat/contracts';
import { requestRpc } from '@chat/kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentWav } from './audio.ts';
import { createMediaHarness, type MediaHarness, oneFile } from './harness.ts';

let h: MediaHarness;
const owner = randomUUID();
beforeAll(async () => {
  h = await createMediaHarness();
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
    const reply = MediaFileReply.parse(await requestRpc(h.runtime.bus, MEDIA_RPC.fileGet, { id: file.id }));
    expect(reply.durationSeconds).toBeCloseTo(3, 2);
    const { rows } = await h.runtime.pool.query('SELECT duration_seconds FROM media_files WHERE id = $1', [file.id]);
    expect(rows[0].duration_seconds).toBeCloseTo(3, 2);
  });

  it('keeps no length for a file that is not audio', async () => {
    const file = await upload(Buffer.from('just some text'), 'notes.txt');
    const record = await h.app.inject({ method: 'GET', url: `/v1/media/${file.id}`, headers: await h.auth(owner) });
    expect(record.json().durationSeconds).toBeNull();
  });
});
