import { randomBytes, randomUUID } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IMAGE_MAX_BYTES, PAGE_MAX_BYTES } from '../src/domain/link-previews.ts';
import { createMediaHarness, localPageFetch, type MediaHarness, PNG_1X1 } from './harness.ts';
import { html, startPageServer } from './page-server.ts';

// Pages that broke previews: charsets without a decoder, titles that are not the document's, an
// image larger than a page, a body in an encoding that was not asked for.

let h: MediaHarness;
let server: Awaited<ReturnType<typeof startPageServer>>;
const user = randomUUID();
const BIG_PNG = Buffer.concat([PNG_1X1, randomBytes(2 * 1024 * 1024)]);

beforeAll(async () => {
  server = await startPageServer({
    '/iso-2022-kr': (_req, res) => res.writeHead(200, { 'content-type': 'text/html; charset=iso-2022-kr' }).end('<title>Korean</title>'),
    '/meta-hz': html('<html><head><meta charset="hz-gb-2312"><title>Hz</title></head></html>', 'text/html'),
    '/svg-title': html(
      '<!doctype html><html><head><title>Real title</title></head><body><svg><title>Close icon</title><path d="M0 0"/></svg></body></html>',
    ),
    '/svg-first': html('<html><body><svg><title>Icon</title></svg><title>Late title</title></body></html>'),
    '/two-titles': html('<html><head><title>First</title><title>Second</title></head></html>'),
    '/big.png': (_req, res) => res.writeHead(200, { 'content-type': 'image/png' }).end(BIG_PNG),
    '/gzip': (_req, res) =>
      res
        .writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-encoding': 'gzip' })
        .end(gzipSync('<html><head><title>Zipped</title></head></html>')),
  });
  h = await createMediaHarness({ fetchLink: localPageFetch() });
});
afterAll(async () => {
  await h.close();
  await server.close();
});

async function preview(path: string) {
  const url = `${server.origin}${path}`;
  return h.app.inject({ method: 'GET', url: `/v1/link-preview?url=${encodeURIComponent(url)}`, headers: await h.auth(user) });
}

async function cached(path: string) {
  const { rows } = await h.runtime.pool.query('SELECT preview, error FROM link_previews WHERE url = $1', [`${server.origin}${path}`]);
  return rows;
}

describe('GET /v1/link-preview: odd pages', () => {
  it.each(['/iso-2022-kr', '/meta-hz'])(
    'a page in an encoding the standard decodes to U+FFFD ("replacement", %s) previews as one naming nothing',
    async (path) => {
      const res = await preview(path);
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({
        url: `${server.origin}${path}`,
        title: null,
        description: null,
        siteName: null,
        imageUrl: null,
        type: 'website',
      });
    },
  );

  it('takes the title from the first <title> of the document, never from an SVG icon', async () => {
    expect((await preview('/svg-title')).json().title).toBe('Real title');
    expect((await preview('/two-titles')).json().title).toBe('First');
    expect((await preview('/svg-first')).json().title).toBe('Late title');
  });

  it('keeps a direct image link larger than a page (up to the 5 MiB of a preview image)', async () => {
    expect(BIG_PNG.length).toBeGreaterThan(PAGE_MAX_BYTES);
    expect(BIG_PNG.length).toBeLessThan(IMAGE_MAX_BYTES);
    const res = await preview('/big.png');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ type: 'image', imageUrl: expect.stringMatching(/\/v1\/media\/[0-9a-f-]{36}\/preview\.png$/) });
    const { rows } = await h.runtime.pool.query('SELECT size FROM media_files WHERE id = $1', [res.json().imageUrl.split('/')[5]]);
    expect(rows).toEqual([{ size: BIG_PNG.length }]);
  });

  it('refuses a page gzip-encoded although identity was asked for (400), caching no empty preview', async () => {
    const res = await preview('/gzip');
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ error: 'The link answered in an encoding that was not asked for' });
    expect(await cached('/gzip')).toEqual([{ preview: null, error: 'The link answered in an encoding that was not asked for' }]);
  });
});
