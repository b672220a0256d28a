import { randomBytes, randomUUID } from 'node:crypto';
import { type IncomingMessage, request } from 'node:http';
import { until } from '@chat/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PART_SIZE } from '../src/db/storage.ts';
import { createMediaHarness, type MediaHarness } from './harness.ts';

// Real sockets: inject() always delivers the whole body, so these need a listening app.
const LIMIT = 4 * PART_SIZE;
let h: MediaHarness;
let origin: string;

beforeAll(async () => {
  h = await createMediaHarness({ env: { MEDIA_MAX_UPLOAD_BYTES: String(LIMIT) } });
  origin = await h.app.listen({ host: '127.0.0.1', port: 0 });
});
afterAll(() => h.close());

/** A chunked upload whose body the test writes, and never ends unless told to. */
async function openUpload(filename: string) {
  const boundary = `----open${randomBytes(6).toString('hex')}`;
  const req = request(`${origin}/v1/media`, {
    method: 'POST',
    headers: { ...(await h.auth(randomUUID())), 'content-type': `multipart/form-data; boundary=${boundary}` },
  });
  req.on('error', () => {}); // the server may close the socket while we still write
  const response = new Promise<IncomingMessage>((resolve) => req.on('response', resolve));
  req.write(
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\nContent-Type: application/octet-stream\r\n\r\n`,
  );
  return { req, response };
}

async function readJson(res: IncomingMessage) {
  const chunks: Buffer[] = [];
  for await (const chunk of res) chunks.push(chunk as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

describe('uploads over a real connection', () => {
  it('answers 413 as soon as the limit is passed, while the body is still open', async () => {
    const { req, response } = await openUpload('huge.bin');
    req.write(randomBytes(LIMIT + 1));
    const res = await response; // the request is never ended: only an early answer gets here
    expect(res.statusCode).toBe(413);
    expect(await readJson(res)).toEqual({ error: `The file is larger than the upload limit of ${LIMIT} bytes` });
    req.destroy();
    await until(async () => (await h.incompleteUploads()).length === 0, { what: 'the multipart upload is aborted' });
    expect(await h.objectKeys()).toEqual([]);
    expect(await h.rows()).toEqual([]);
  });

  it('leaves no object, no partial upload and no record when the client goes away mid-upload', async () => {
    const { req } = await openUpload('interrupted.bin');
    // Two parts and a bit: the multipart upload starts once a second part is known to exist.
    req.write(randomBytes(2 * PART_SIZE + 1024 * 1024));
    // The upload is under way in the store before the client leaves.
    await until(async () => (await h.incompleteUploads()).length === 1, { what: 'a multipart upload is under way' });
    req.destroy();
    await until(async () => (await h.incompleteUploads()).length === 0, { what: 'the multipart upload is aborted' });
    expect(await h.objectKeys()).toEqual([]);
    expect(await h.rows()).toEqual([]);
  });
});
