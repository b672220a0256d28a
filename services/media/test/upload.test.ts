import { randomBytes, randomUUID } from 'node:crypto';
import { MEDIA_SUBJECTS, MediaFileUploaded } from '@chat/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PART_SIZE } from '../src/db/storage.ts';
import { createMediaHarness, type MediaHarness, multipart, oneFile, PNG_1X1, sha256 } from './harness.ts';

// Above one S3 part, so that "exactly the limit" goes through the multipart path.
const LIMIT = PART_SIZE + 1024 * 1024;
const uploader = randomUUID();
let h: MediaHarness;
let headers: Record<string, string>;

beforeAll(async () => {
  h = await createMediaHarness({ env: { MEDIA_MAX_UPLOAD_BYTES: String(LIMIT) } });
  headers = await h.auth(uploader);
});
afterAll(() => h.close());

async function upload(body: { payload: Buffer; headers: Record<string, string> }, auth = headers) {
  return h.app.inject({ method: 'POST', url: '/v1/media', headers: { ...auth, ...body.headers }, payload: body.payload });
}

async function rowCount() {
  return (await h.rows()).length;
}

describe('POST /v1/media stores the bytes, records them and announces them', () => {
  it('stores a 1-byte file: answer, object, row and sha256 agree', async () => {
    const res = await upload(oneFile('A', 'one.txt', 'application/pdf'));
    expect(res.statusCode).toBe(201);
    const body = res.json();
    expect(body).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      url: `https://chat.example.test/v1/media/${body.id}/one.txt`,
      filename: 'one.txt',
      contentType: 'text/plain',
      size: 1,
    });
    expect(await h.objectBytes(body.id)).toEqual(Buffer.from('A'));
    const [row] = (await h.rows()).filter((r) => r.id === body.id);
    expect(row).toMatchObject({ uploader_id: uploader, storage_key: body.id, size: 1, sha256: sha256(Buffer.from('A')) });
  });

  it('accepts an empty file (size 0) and stores an empty object', async () => {
    const res = await upload(oneFile(Buffer.alloc(0), 'empty.bin'));
    expect(res.statusCode).toBe(201);
    expect(res.json()).toMatchObject({ size: 0, filename: 'empty.bin', contentType: 'application/octet-stream' });
    expect(await h.objectBytes(res.json().id)).toHaveLength(0);
  });

  it('accepts a file of exactly the limit, stored in several parts', async () => {
    const data = randomBytes(LIMIT);
    const res = await upload(oneFile(data, 'limit.bin'));
    expect(res.statusCode).toBe(201);
    expect(res.json().size).toBe(LIMIT);
    const stored = await h.objectBytes(res.json().id);
    expect(sha256(stored)).toBe(sha256(data));
    expect(await h.incompleteUploads()).toEqual([]);
  });

  it('answers 413 for one byte over the limit and keeps nothing', async () => {
    const [rowsBefore, keysBefore] = [await rowCount(), await h.objectKeys()];
    const res = await upload(oneFile(randomBytes(LIMIT + 1), 'over.bin'));
    expect(res.statusCode).toBe(413);
    expect(res.json()).toEqual({ error: `The file is larger than the upload limit of ${LIMIT} bytes` });
    expect(await rowCount()).toBe(rowsBefore);
    expect(await h.objectKeys()).toEqual(keysBefore);
    expect(await h.incompleteUploads()).toEqual([]);
  });

  it('reports what the bytes are: a PNG named .txt and declared text/plain is image/png', async () => {
    const res = await upload(oneFile(PNG_1X1, 'notes.txt', 'text/plain'));
    expect(res.statusCode).toBe(201);
    expect(res.json()).toMatchObject({ filename: 'notes.txt', contentType: 'image/png', size: PNG_1X1.length });
    const [row] = (await h.rows()).filter((r) => r.id === res.json().id);
    expect(row?.content_type).toBe('image/png');
    expect((await h.s3.statObject(h.bucket, res.json().id)).metaData['content-type']).toBe('image/png');
  });

  it('takes the last path segment of a name and strips control and bidi characters; the key is the server id', async () => {
    const traversal = await upload(oneFile('x', '../../etc/passwd'));
    expect(traversal.statusCode).toBe(201);
    expect(traversal.json().filename).toBe('passwd');

    // RFC 5987 encoding is how raw control characters reach the parser inside a header value.
    const body = multipart([{ name: 'file', disposition: "; filename*=utf-8''..%2F..%2Fa%00b%09c%E2%80%AEd%7F%20e.txt", data: 'x' }]);
    const res = await upload(body);
    expect(res.statusCode).toBe(201);
    expect(res.json().filename).toBe('abcd_e.txt');
    expect(res.json().url).toBe(`https://chat.example.test/v1/media/${res.json().id}/abcd_e.txt`);
    const keys = await h.objectKeys();
    expect(keys).toContain(res.json().id);
    expect(keys.every((k) => /^[0-9a-f-]{36}$/.test(k ?? ''))).toBe(true);
  });

  it('refuses a name with CR LF (the parser drops such a part) and stores nothing', async () => {
    const [rowsBefore, keysBefore] = [await rowCount(), await h.objectKeys()];
    const body = multipart([{ name: 'file', disposition: "; filename*=utf-8''..%2F..%2Fa%0D%0ASet-Cookie%3A%20x.txt", data: 'x' }]);
    const res = await upload(body);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ error: expect.stringContaining('line breaks') });
    expect(await rowCount()).toBe(rowsBefore);
    expect(await h.objectKeys()).toEqual(keysBefore);
  });

  it('stores ten concurrent uploads, each under its own id with its own bytes', async () => {
    const files = Array.from({ length: 10 }, (_, i) => randomBytes(64 * 1024 + i));
    const answers = await Promise.all(files.map((data, i) => upload(oneFile(data, `c${i}.bin`))));
    expect(answers.map((r) => r.statusCode)).toEqual(Array(10).fill(201));
    const ids = answers.map((r) => r.json().id);
    expect(new Set(ids).size).toBe(10);
    const rows = await h.rows();
    for (const [i, id] of ids.entries()) {
      expect(rows.find((r) => r.id === id)).toMatchObject({
        filename: `c${i}.bin`,
        size: files[i]?.length,
        sha256: sha256(files[i] as Buffer),
      });
      expect(sha256(await h.objectBytes(id))).toBe(sha256(files[i] as Buffer));
    }
  });

  it('publishes media.file.uploaded through the outbox with the record', async () => {
    const res = await upload(oneFile(PNG_1X1, 'event.png'));
    await h.runtime.relay.flush();
    const { bus } = h.runtime;
    const msg = await bus.jsm.streams.getMessage(bus.name('MEDIA'), { last_by_subj: bus.subject(MEDIA_SUBJECTS.fileUploaded) });
    const event = msg?.json<{ subject: string; data: unknown }>();
    expect(event?.subject).toBe(MEDIA_SUBJECTS.fileUploaded);
    expect(MediaFileUploaded.parse(event?.data)).toMatchObject({
      id: res.json().id,
      uploaderId: uploader,
      filename: 'event.png',
      contentType: 'image/png',
      size: PNG_1X1.length,
      sha256: sha256(PNG_1X1),
      url: res.json().url,
    });
  });
});

describe('POST /v1/media refuses bad requests and keeps nothing', () => {
  async function expectNothingKept(res: { statusCode: number; json(): unknown }, status: number, error: RegExp) {
    expect(res.statusCode).toBe(status);
    expect(res.json()).toEqual({ error: expect.stringMatching(error) });
  }

  it('answers 401 without a token, before reading the body', async () => {
    const before = await rowCount();
    await expectNothingKept(await upload(oneFile('x'), {}), 401, /token/i);
    expect(await rowCount()).toBe(before);
  });

  it('answers 400 when there is no part named file', async () => {
    const before = await rowCount();
    await expectNothingKept(await upload(multipart([{ name: 'caption', data: 'hi' }])), 400, /Missing the part named "file"/);
    await expectNothingKept(await upload(multipart([])), 400, /Missing the part named "file"|Malformed/);
    expect(await rowCount()).toBe(before);
  });

  it('answers 400 for two file parts and removes the first one it stored', async () => {
    const [rowsBefore, keysBefore] = [await rowCount(), await h.objectKeys()];
    const body = multipart([
      { name: 'file', filename: 'a.txt', data: 'first' },
      { name: 'file', filename: 'b.txt', data: 'second' },
    ]);
    await expectNothingKept(await upload(body), 400, /exactly one part named "file"/);
    expect(await rowCount()).toBe(rowsBefore);
    expect(await h.objectKeys()).toEqual(keysBefore);
  });

  it('answers 400 for a file part under another name, and for a text part named file', async () => {
    const before = await rowCount();
    await expectNothingKept(
      await upload(multipart([{ name: 'avatar', filename: 'a.png', data: PNG_1X1 }])),
      400,
      /Unexpected file part "avatar"/,
    );
    await expectNothingKept(await upload(multipart([{ name: 'file', data: 'not a file' }])), 400, /must be a file/);
    expect(await rowCount()).toBe(before);
  });

  it('ignores other text fields next to the file', async () => {
    const body = multipart([
      { name: 'caption', data: 'hello' },
      { name: 'file', filename: 'with-field.txt', data: 'x' },
    ]);
    const res = await upload(body);
    expect(res.statusCode).toBe(201);
    expect(res.json().filename).toBe('with-field.txt');
  });

  it('answers 415 for a body that is not multipart, whatever its type', async () => {
    const before = await rowCount();
    const json = await h.app.inject({ method: 'POST', url: '/v1/media', headers, payload: { file: 'x' } });
    await expectNothingKept(json, 415, /multipart\/form-data/);
    const png = await h.app.inject({
      method: 'POST',
      url: '/v1/media',
      headers: { ...headers, 'content-type': 'image/png' },
      payload: PNG_1X1,
    });
    await expectNothingKept(png, 415, /multipart\/form-data/);
    const none = await h.app.inject({ method: 'POST', url: '/v1/media', headers });
    await expectNothingKept(none, 415, /multipart\/form-data/);
    expect(await rowCount()).toBe(before);
  });

  it('answers 400 for a multipart body without a boundary or cut short', async () => {
    const noBoundary = await h.app.inject({
      method: 'POST',
      url: '/v1/media',
      headers: { ...headers, 'content-type': 'multipart/form-data' },
      payload: 'x',
    });
    await expectNothingKept(noBoundary, 400, /Malformed multipart body/);
    const whole = oneFile('abcdef', 'cut.txt');
    const cut = await upload({ ...whole, payload: whole.payload.subarray(0, whole.payload.length - 20) });
    expect(cut.statusCode).toBe(400);
    expect((await h.rows()).some((r) => r.filename === 'cut.txt')).toBe(false);
  });
});
