import { randomBytes, randomUUID } from 'node:crypto';
import { MEDIA_RPC, MediaFile, MediaFileReply } from '@chat/contracts';
import { AppError, requestRpc } from '@chat/kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PART_SIZE } from '../src/storage.ts';
import { createMediaHarness, type MediaHarness, oneFile, PNG_1X1, sha256 } from './harness.ts';

const owner = randomUUID();
let h: MediaHarness;
let png: { id: string; url: string; size: number };
let big: { id: string; url: string; data: Buffer };

beforeAll(async () => {
  h = await createMediaHarness();
  png = await uploaded(PNG_1X1, 'pixel.png');
  const data = randomBytes(PART_SIZE + 4096);
  big = { ...(await uploaded(data, 'big.bin')), data };
});
afterAll(() => h.close());

async function uploaded(data: Buffer | string, filename: string) {
  const body = oneFile(data, filename);
  const res = await h.app.inject({
    method: 'POST',
    url: '/v1/media',
    headers: { ...(await h.auth(owner)), ...body.headers },
    payload: body.payload,
  });
  if (res.statusCode !== 201) throw new Error(`upload answered ${res.statusCode}: ${res.body}`);
  return res.json() as { id: string; url: string; size: number; contentType: string; filename: string };
}

/** GET of an uploaded file's url, without a token, as an <img> would. */
function fetchFile(url: string, headers: Record<string, string> = {}) {
  return h.app.inject({ method: 'GET', url: new URL(url).pathname, headers });
}

describe('GET /v1/media/{id}/{filename} serves the bytes without a token', () => {
  it('serves an image inline with its type, length, ETag and long cache headers', async () => {
    const res = await fetchFile(png.url);
    expect(res.statusCode).toBe(200);
    expect(res.rawPayload).toEqual(PNG_1X1);
    expect(res.headers).toMatchObject({
      'content-type': 'image/png',
      'content-length': String(PNG_1X1.length),
      etag: `"${sha256(PNG_1X1)}"`,
      'cache-control': 'public, max-age=31536000, immutable',
      'accept-ranges': 'bytes',
      'content-disposition': 'inline; filename=pixel.png',
      'x-content-type-options': 'nosniff',
    });
  });

  it('serves HTML as an attachment, with nosniff and a sandboxing CSP', async () => {
    const html = await uploaded('<!DOCTYPE html><html><script>alert(document.cookie)</script></html>', 'page.txt');
    expect(html.contentType).toBe('text/html');
    const res = await fetchFile(html.url);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/html');
    expect(res.headers['content-disposition']).toBe('attachment; filename=page.txt');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['content-security-policy']).toMatch(/sandbox/);
    expect(res.headers['content-security-policy']).toMatch(/default-src 'none'/);
  });

  it('serves SVG and XML as attachments too, and plain text inline as UTF-8', async () => {
    const svg = await uploaded('<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"></svg>', 'icon.png');
    expect(svg.contentType).toBe('image/svg+xml');
    expect((await fetchFile(svg.url)).headers['content-disposition']).toMatch(/^attachment/);
    const xml = await uploaded('<?xml version="1.0"?><note>hi</note>', 'note.xml');
    expect(xml.contentType).toBe('application/xml');
    expect((await fetchFile(xml.url)).headers['content-disposition']).toMatch(/^attachment/);
    const text = await uploaded('héllo wörld', 'hello.txt');
    const res = await fetchFile(text.url);
    expect(res.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(res.headers['content-disposition']).toMatch(/^inline/);
    expect(res.body).toBe('héllo wörld');
  });

  it('answers a byte range with 206 and Content-Range', async () => {
    const first = await fetchFile(png.url, { range: 'bytes=0-9' });
    expect(first.statusCode).toBe(206);
    expect(first.headers['content-range']).toBe(`bytes 0-9/${PNG_1X1.length}`);
    expect(first.headers['content-length']).toBe('10');
    expect(first.rawPayload).toEqual(PNG_1X1.subarray(0, 10));

    const suffix = await fetchFile(png.url, { range: 'bytes=-5' });
    expect(suffix.statusCode).toBe(206);
    expect(suffix.rawPayload).toEqual(PNG_1X1.subarray(-5));

    // Across the boundary of two stored parts.
    const start = PART_SIZE - 100;
    const across = await fetchFile(big.url, { range: `bytes=${start}-` });
    expect(across.statusCode).toBe(206);
    expect(across.headers['content-range']).toBe(`bytes ${start}-${big.data.length - 1}/${big.data.length}`);
    expect(across.rawPayload).toEqual(big.data.subarray(start));
  });

  it('answers 416 for a range past the end, and ignores ranges it does not serve', async () => {
    const past = await fetchFile(png.url, { range: `bytes=${PNG_1X1.length}-` });
    expect(past.statusCode).toBe(416);
    expect(past.headers['content-range']).toBe(`bytes */${PNG_1X1.length}`);
    expect(past.json()).toEqual({ error: 'Range not satisfiable' });

    const ignored: Record<string, string>[] = [
      { range: 'bytes=0-1,5-6' },
      { range: 'pages=1' },
      { range: 'bytes=0-1', 'if-range': '"other"' },
    ];
    for (const headers of ignored) {
      const whole = await fetchFile(png.url, headers);
      expect(whole.statusCode).toBe(200);
      expect(whole.rawPayload).toEqual(PNG_1X1);
    }
  });

  it('answers 304 to If-None-Match with the current ETag', async () => {
    const res = await fetchFile(png.url, { 'if-none-match': `"${sha256(PNG_1X1)}"` });
    expect(res.statusCode).toBe(304);
    expect(res.rawPayload).toHaveLength(0);
    expect(res.headers.etag).toBe(`"${sha256(PNG_1X1)}"`);
  });

  it('serves a long non-ASCII name under its percent-encoded url', async () => {
    const name = `${'ü'.repeat(200)}.png`;
    const file = await uploaded(PNG_1X1, name);
    expect(file.filename).toBe(`${'ü'.repeat(124)}.png`);
    const res = await fetchFile(file.url);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-disposition']).toContain(`filename*=UTF-8''${encodeURIComponent('ü')}`);
  });

  it('answers 404 for another name, an unknown id, and 400 for an id that is not one', async () => {
    const other = await fetchFile(png.url.replace('pixel.png', 'other.png'));
    expect(other.statusCode).toBe(404);
    expect(other.json()).toEqual({ error: 'File not found' });
    const unknown = await h.app.inject({ method: 'GET', url: `/v1/media/${randomUUID()}/pixel.png` });
    expect(unknown.statusCode).toBe(404);
    const bad = await h.app.inject({ method: 'GET', url: '/v1/media/not-an-id/pixel.png' });
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toEqual({ error: expect.stringContaining('path.id') });
  });
});

describe('GET /v1/media/{id} answers the record to its uploader only', () => {
  it('answers the full record to the uploader', async () => {
    const res = await h.app.inject({ method: 'GET', url: `/v1/media/${png.id}`, headers: await h.auth(owner) });
    expect(res.statusCode).toBe(200);
    expect(MediaFile.parse(res.json())).toEqual({
      id: png.id,
      uploaderId: owner,
      url: png.url,
      filename: 'pixel.png',
      contentType: 'image/png',
      size: PNG_1X1.length,
      sha256: sha256(PNG_1X1),
      durationSeconds: null,
      createdAt: expect.any(String),
    });
  });

  it('answers 404 to anyone else and 401 without a token', async () => {
    const stranger = await h.app.inject({ method: 'GET', url: `/v1/media/${png.id}`, headers: await h.auth(randomUUID()) });
    expect(stranger.statusCode).toBe(404);
    expect(stranger.json()).toEqual({ error: 'File not found' });
    const anonymous = await h.app.inject({ method: 'GET', url: `/v1/media/${png.id}` });
    expect(anonymous.statusCode).toBe(401);
  });
});

describe('rpc.media.file.get', () => {
  it('answers the stored record of a file', async () => {
    const reply = await requestRpc(h.runtime.bus, MEDIA_RPC.fileGet, { id: png.id });
    expect(MediaFileReply.parse(reply)).toEqual({
      id: png.id,
      uploaderId: owner,
      url: png.url,
      filename: 'pixel.png',
      contentType: 'image/png',
      size: PNG_1X1.length,
      durationSeconds: null,
    });
  });

  it('answers 404 for an unknown id and 400 for a malformed one', async () => {
    await expect(requestRpc(h.runtime.bus, MEDIA_RPC.fileGet, { id: randomUUID() })).rejects.toMatchObject({ status: 404 });
    const malformed: unknown = await requestRpc(h.runtime.bus, MEDIA_RPC.fileGet, { id: 'x' }).catch((e: unknown) => e);
    expect(malformed).toBeInstanceOf(AppError);
    expect((malformed as AppError).status).toBe(400);
  });
});
