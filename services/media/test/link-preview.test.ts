import { randomBytes, randomUUID } from 'node:crypto';
import { withTx } from '@chat/kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usageOf } from '../src/db/quota.ts';
import { previewLinksOf, publishEmbeds } from '../src/domain/embeds.ts';
import { PLATFORM_UPLOADER, previewLink, purgeExpiredPreviews } from '../src/domain/link-previews.ts';
import { createMediaHarness, localPageFetch, type MediaHarness, PNG_1X1, sha256 } from './harness.ts';
import { html, type Page, redirect, startPageServer } from './page-server.ts';

let h: MediaHarness;
let server: Awaited<ReturnType<typeof startPageServer>>;
const user = randomUUID();
let failing = true;
// Images of their own (a PNG signature sniffs as PNG whatever follows), so that no other test's copy is reused.
const LOGO = Buffer.concat([PNG_1X1, randomBytes(16)]);
const FLEETING = Buffer.concat([PNG_1X1, randomBytes(16)]);
const SHOWN = Buffer.concat([PNG_1X1, randomBytes(16)]);
const GONE = Buffer.concat([PNG_1X1, randomBytes(16)]);
const CHARGED = Buffer.concat([PNG_1X1, randomBytes(16)]);
const AUTHORED = Buffer.concat([PNG_1X1, randomBytes(16)]);
const png =
  (bytes: Buffer): Page =>
  (_req, res) =>
    res.writeHead(200, { 'content-type': 'image/png' }).end(bytes);

beforeAll(async () => {
  server = await startPageServer({
    '/og': html(`<!doctype html><html><head>
      <meta property="og:title" content="An &amp; OpenGraph title">
      <meta property="og:description" content="What the page is about">
      <meta property="og:site_name" content="Example Site">
      <meta property="og:type" content="article">
      <meta property="og:image" content="/pixel.png">
      <meta name="twitter:title" content="not this one">
      <title>not this either</title></head><body><p>text</p></body></html>`),
    '/twitter': html(`<html><head><meta name="twitter:card" content="summary">
      <meta name="twitter:title" content="Card title"><meta name="twitter:description" content="Card text">
      <meta name="twitter:image" content="http://127.0.0.1:${'{port}'}/pixel.png"></head></html>`),
    '/bare': html('<html><head><title>\n  Just a   title </title><meta name="description" content="plain description"></head></html>'),
    '/oembed-page': html('<html><head><link rel="alternate" type="application/json+oembed" href="/oembed.json"></head></html>'),
    '/oembed.json': (_req, res) =>
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ type: 'video', title: 'A video', provider_name: 'Tube' })),
    '/pixel.png': (_req, res) => res.writeHead(200, { 'content-type': 'image/png' }).end(PNG_1X1),
    '/fake-image': html('<meta property="og:image" content="/not-an-image.png">'),
    '/not-an-image.png': (_req, res) => res.writeHead(200, { 'content-type': 'image/png' }).end('<script>alert(1)</script>'),
    '/doc.pdf': (_req, res) => res.writeHead(200, { 'content-type': 'application/pdf' }).end('%PDF-1.4 <title>no</title>'),
    '/to-private': redirect('http://10.0.0.1/'),
    '/to-bad-port': redirect('http://a:99999/'),
    '/to-bad-host': redirect('http://['),
    '/flaky': (_req, res) => (failing ? res.writeHead(500).end() : html('<title>back</title>')(_req, res)),
    '/cached': html('<title>cached page</title>'),
    '/with-logo': html('<meta property="og:image" content="/logo.png">'),
    '/logo.png': png(LOGO),
    '/fleeting': html('<meta property="og:image" content="/fleeting.png">'),
    '/fleeting.png': png(FLEETING),
    '/shown': html('<meta property="og:image" content="/shown.png">'),
    '/shown.png': png(SHOWN),
    '/gone': html('<title>gone</title><meta property="og:image" content="/gone.png">'),
    '/gone.png': png(GONE),
    '/charged': html('<title>charged</title><meta property="og:image" content="/charged.png">'),
    '/charged.png': png(CHARGED),
    '/authored': html('<title>authored</title><meta property="og:image" content="/authored.png">'),
    '/authored.png': png(AUTHORED),
    // PostgreSQL stores neither U+0000 nor a lone surrogate: every field below holds one.
    '/nul': html(`<html><head><title>Before\u0000after</title>
      <meta name="description" content="d\u0000e"><meta property="og:site_name" content="S\u0000ite">
      <meta property="og:type" content="arti\u0000cle"></head></html>`),
    '/nul-oembed': html('<html><head><link rel="alternate" type="application/json+oembed" href="/nul-oembed.json"></head></html>'),
    '/nul-oembed.json': (_req, res) =>
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end('{"type": "vid\\u0000eo", "title": "T\\u0000itle", "provider_name": "Half \\ud83d pair"}'),
    // Café in windows-1252 (é is 0xE9), its charset named in the page only, or nowhere.
    '/meta-charset': latin1Page('text/html', '<meta charset="windows-1252">'),
    '/http-equiv': latin1Page('text/html', '<meta http-equiv="Content-Type" content="text/html; charset=iso-8859-1">'),
    '/bogus-header-meta-charset': latin1Page('text/html; charset=x-no-such-charset', '<meta charset="windows-1252">'),
    '/late-meta-charset': latin1Page('text/html', `<!--${'x'.repeat(1024)}--><meta charset="windows-1252">`),
    '/header-wins': (_req, res) =>
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end('<meta charset="windows-1252"><title>Café</title>'),
    '/undeclared-utf8': (_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<title>Café</title>'),
    // A title cut to its 1024 characters between the two halves of its 512th emoji.
    '/cut-emoji': html(`<title>a${'\u{1F600}'.repeat(600)}</title>`),
  });
  // The twitter page names its image with an absolute url on the server's own port.
  server.pages['/twitter'] = html(
    `<html><head><meta name="twitter:title" content="Card title"><meta name="twitter:description" content="Card text">
     <meta name="twitter:image" content="${server.origin}/pixel.png"></head></html>`,
  );
  h = await createMediaHarness({ fetchLink: localPageFetch() });
});
afterAll(async () => {
  await h.close();
  await server.close();
});

/** A page whose title is Café in windows-1252, after `head` (where a page may name its charset). */
function latin1Page(contentType: string, head: string): Page {
  const body = Buffer.concat([Buffer.from(`<html><head>${head}<title>Caf`), Buffer.from([0xe9]), Buffer.from('</title></head></html>')]);
  return (_req, res) => res.writeHead(200, { 'content-type': contentType }).end(body);
}

async function preview(url: string, auth = true, as = user) {
  const headers = auth ? await h.auth(as) : {};
  return h.app.inject({ method: 'GET', url: `/v1/link-preview?url=${encodeURIComponent(url)}`, headers });
}

describe('GET /v1/link-preview', () => {
  it('reads OpenGraph tags, preferring them to Twitter and <title>, and copies the image here', async () => {
    const res = await preview(`${server.origin}/og#section`);
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body).toEqual({
      url: `${server.origin}/og`,
      title: 'An & OpenGraph title',
      description: 'What the page is about',
      siteName: 'Example Site',
      type: 'article',
      imageUrl: expect.stringMatching(/^https:\/\/chat\.example\.test\/v1\/media\/[0-9a-f-]{36}\/preview\.png$/),
    });
    const id = new URL(body.imageUrl).pathname.split('/')[3] as string;
    const served = await h.app.inject({ method: 'GET', url: new URL(body.imageUrl).pathname });
    expect(served.statusCode).toBe(200);
    expect(served.rawPayload).toEqual(PNG_1X1);
    const rows = await h.rows();
    expect(rows.find((r) => r.id === id)).toMatchObject({ uploader_id: PLATFORM_UPLOADER, content_type: 'image/png' });
  });

  it('reads a Twitter card', async () => {
    const res = await preview(`${server.origin}/twitter`);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ title: 'Card title', description: 'Card text', siteName: null, type: 'website' });
    expect(res.json().imageUrl).toMatch(/^https:\/\/chat\.example\.test\/v1\/media\//);
  });

  it('falls back to the bare <title> and the description meta tag', async () => {
    const res = await preview(`${server.origin}/bare`);
    expect(res.json()).toEqual({
      url: `${server.origin}/bare`,
      title: 'Just a title',
      description: 'plain description',
      siteName: null,
      imageUrl: null,
      type: 'website',
    });
  });

  it('uses the oEmbed answer that the page links', async () => {
    const res = await preview(`${server.origin}/oembed-page`);
    expect(res.json()).toMatchObject({ title: 'A video', siteName: 'Tube', type: 'video' });
  });

  it('leaves out an "image" whose bytes are not an image', async () => {
    const before = (await h.rows()).length;
    const res = await preview(`${server.origin}/fake-image`);
    expect(res.statusCode).toBe(200);
    expect(res.json().imageUrl).toBeNull();
    expect((await h.rows()).length).toBe(before);
  });

  it('does not parse a page that is not HTML', async () => {
    const res = await preview(`${server.origin}/doc.pdf`);
    expect(res.json()).toEqual({
      url: `${server.origin}/doc.pdf`,
      title: null,
      description: null,
      siteName: null,
      imageUrl: null,
      type: 'link',
    });
  });

  it('previews a direct image link as an image kept here', async () => {
    const res = await preview(`${server.origin}/pixel.png`);
    expect(res.json()).toMatchObject({ type: 'image', title: null });
    expect(res.json().imageUrl).toMatch(/\/preview\.png$/);
  });

  it('answers 400 for a redirect into a private address', async () => {
    const res = await preview(`${server.origin}/to-private`);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ error: 'The link points to an address that is not allowed' });
  });

  it('answers 400 for a redirect whose Location is no url, and caches that failure like any other', async () => {
    for (const path of ['/to-bad-port', '/to-bad-host']) {
      const res = await preview(`${server.origin}${path}`);
      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual({ error: 'The link could not be fetched' });
      const again = await preview(`${server.origin}${path}`);
      expect(again.statusCode).toBe(400);
      expect(server.hits(path)).toBe(1);
      const { rows } = await h.runtime.pool.query('SELECT preview, error FROM link_previews WHERE url = $1', [`${server.origin}${path}`]);
      expect(rows).toEqual([{ preview: null, error: 'The link could not be fetched' }]);
    }
  });

  it('answers 400 naming the field for a missing or non-http url', async () => {
    const missing = await h.app.inject({ method: 'GET', url: '/v1/link-preview', headers: await h.auth(user) });
    expect(missing.statusCode).toBe(400);
    expect(missing.json().error).toMatch(/url/);
    const js = await preview('javascript:alert(1)');
    expect(js.statusCode).toBe(400);
    expect(js.json()).toEqual({ error: 'url must be an http or https url' });
  });

  it('needs a token', async () => {
    expect((await preview(`${server.origin}/bare`, false)).statusCode).toBe(401);
  });

  it('serves a fresh preview from the cache without fetching again', async () => {
    await preview(`${server.origin}/cached`);
    await preview(`${server.origin}/cached?`);
    const res = await preview(`${server.origin}/cached#other`);
    expect(res.json().title).toBe('cached page');
    expect(server.hits('/cached')).toBe(1);
  });

  it('caches a failure for a few minutes, then tries again', async () => {
    const url = `${server.origin}/flaky`;
    expect((await preview(url)).statusCode).toBe(400);
    failing = false;
    expect((await preview(url)).json()).toEqual({ error: 'The link answered with status 500' });
    expect(server.hits('/flaky')).toBe(1);
    const sixMinutesOn = new Date(Date.now() + 6 * 60 * 1000);
    const fresh = await previewLink({ ...h.deps, now: () => sixMinutesOn }, url, randomUUID());
    expect(fresh.title).toBe('back');
    expect(server.hits('/flaky')).toBe(2);
  });
});

describe('text PostgreSQL cannot store', () => {
  it('previews a page whose title, description, site name and type hold U+0000: 200, each NUL shown as U+FFFD, and cached', async () => {
    const res = await preview(`${server.origin}/nul`);
    expect(res.statusCode, res.body).toBe(200);
    const expected = { title: 'Before\uFFFDafter', description: 'd\uFFFDe', siteName: 'S\uFFFDite', type: 'arti\uFFFDcle' };
    expect(res.json()).toMatchObject(expected);
    const { rows } = await h.runtime.pool.query('SELECT preview FROM link_previews WHERE url = $1', [`${server.origin}/nul`]);
    expect(rows).toEqual([{ preview: expect.objectContaining(expected) }]);
  });

  it('previews a page whose oEmbed answer holds U+0000 and a lone surrogate', async () => {
    const res = await preview(`${server.origin}/nul-oembed`);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ title: 'T\uFFFDitle', siteName: 'Half \uFFFD pair', type: 'vid\uFFFDeo' });
  });

  it('previews a page whose title is cut between the two halves of an emoji', async () => {
    const res = await preview(`${server.origin}/cut-emoji`);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().title).toBe(`a${'\u{1F600}'.repeat(511)}\uFFFD`);
  });
});

describe('the charset of a page', () => {
  it.each([
    ['<meta charset>', '/meta-charset'],
    ['<meta http-equiv="Content-Type">', '/http-equiv'],
    ['<meta charset> when Content-Type names a charset nobody knows', '/bogus-header-meta-charset'],
  ])('decodes a page by the charset it names in its first 1024 bytes, as browsers do: %s', async (_how, path) => {
    const res = await preview(`${server.origin}${path}`);
    expect(res.statusCode).toBe(200);
    expect(res.json().title).toBe('Café');
  });

  it('lets the charset of Content-Type win over the page’s, and reads an undeclared page as UTF-8', async () => {
    expect((await preview(`${server.origin}/header-wins`)).json().title).toBe('Café');
    expect((await preview(`${server.origin}/undeclared-utf8`)).json().title).toBe('Café');
  });

  it('looks for the page’s charset in its first 1024 bytes only', async () => {
    expect((await preview(`${server.origin}/late-meta-charset`)).json().title).toBe('Caf\uFFFD');
  });
});

describe('preview images', () => {
  const platformFilesOf = async (bytes: Buffer) =>
    (await h.rows()).filter((r) => r.uploader_id === PLATFORM_UPLOADER && r.sha256 === sha256(bytes));
  const imageIdOf = (imageUrl: string) => new URL(imageUrl).pathname.split('/')[3] as string;
  const served = async (imageUrl: string) => (await h.app.inject({ method: 'GET', url: new URL(imageUrl).pathname })).statusCode;

  it('stores one object for two urls that differ only in their query and show the same image', async () => {
    const objects = (await h.objectKeys()).length;
    const first = await preview(`${server.origin}/with-logo?utm_source=a`);
    const second = await preview(`${server.origin}/with-logo?utm_source=b`);
    expect(first.statusCode).toBe(200);
    expect(second.statusCode).toBe(200);
    expect(second.json().imageUrl).toBe(first.json().imageUrl);
    expect(server.hits('/with-logo')).toBe(2);
    const files = await platformFilesOf(LOGO);
    expect(files).toEqual([expect.objectContaining({ id: imageIdOf(first.json().imageUrl) })]);
    expect(await h.objectKeys()).toHaveLength(objects + 1);
    expect(await h.objectBytes(files[0].storage_key)).toEqual(LOGO);
  });

  it('removes an image once its previews expired and no message shows it; keeps one that a message shows', async () => {
    const fleeting = (await preview(`${server.origin}/fleeting`)).json().imageUrl as string;
    const shown = (await preview(`${server.origin}/shown`)).json().imageUrl as string;
    const message = { kind: 'channel' as const, channelId: randomUUID(), messageId: randomUUID() };
    const previews = await previewLinksOf(h.deps, [`${server.origin}/shown`], randomUUID());
    await withTx(h.runtime.pool, (tx) => publishEmbeds(tx, message, previews));
    const hour = 60 * 60 * 1000;
    const purgeAt = (ms: number) => purgeExpiredPreviews({ ...h.deps, now: () => new Date(Date.now() + ms) });

    // Two hours on, the previews are still cached: both images stay.
    await purgeAt(2 * hour);
    expect(await platformFilesOf(FLEETING)).toHaveLength(1);
    expect(await served(fleeting)).toBe(200);

    // A day on, the previews expired: the image only they showed goes, record and object.
    const fleetingKey = (await platformFilesOf(FLEETING))[0].storage_key;
    const purged = await purgeAt(25 * hour);
    expect(await platformFilesOf(FLEETING)).toEqual([]);
    expect(purged.images).toBeGreaterThanOrEqual(1);
    expect(await h.objectKeys()).not.toContain(fleetingKey);
    expect(await served(fleeting)).toBe(404);
    expect(await platformFilesOf(SHOWN)).toEqual([expect.objectContaining({ id: imageIdOf(shown) })]);
    expect(await served(shown)).toBe(200);
  });

  /** `userId`'s quota of files in the hour filled up with 100 uploads of a byte. */
  const fillHourOf = (userId: string) =>
    h.runtime.pool.query(
      `INSERT INTO media_files (id, uploader_id, storage_key, filename, content_type, size, sha256, created_at)
       SELECT gen_random_uuid(), $1, gen_random_uuid()::text, 'x.bin', 'application/octet-stream', 1, repeat('0', 64), now()
       FROM generate_series(1, 100)`,
      [userId],
    );

  it('counts a kept image against the upload quota of who asked: past it the preview comes without it, kept a few minutes only', async () => {
    const full = randomUUID();
    await fillHourOf(full);
    const url = `${server.origin}/charged`;
    const imageless = await preview(url, true, full);
    expect(imageless.statusCode).toBe(200);
    expect(imageless.json()).toMatchObject({ title: 'charged', imageUrl: null });
    expect(await platformFilesOf(CHARGED)).toEqual([]);
    // Cached as it is for the next few minutes, to anyone: the page is not fetched again meanwhile.
    expect((await preview(url, true, randomUUID())).json()).toMatchObject({ title: 'charged', imageUrl: null });
    expect(server.hits('/charged')).toBe(1);

    // Then someone with room gets it whole, the image charged to them alone.
    const other = randomUUID();
    const sixMinutesOn = new Date(Date.now() + 6 * 60 * 1000);
    const whole = await previewLink({ ...h.deps, now: () => sixMinutesOn }, url, other);
    expect(whole).toMatchObject({ title: 'charged', imageUrl: expect.stringContaining('/v1/media/') });
    expect(await platformFilesOf(CHARGED)).toHaveLength(1);
    expect(await usageOf(h.runtime.pool, other, sixMinutesOn)).toEqual({ filesInHour: 1, bytesInDay: CHARGED.length });
    expect(await usageOf(h.runtime.pool, full, new Date())).toEqual({ filesInHour: 100, bytesInDay: 100 });
  });

  it("shows a message's link without its image when the image does not fit the author's quota", async () => {
    const author = randomUUID();
    await fillHourOf(author);
    expect(await previewLinksOf(h.deps, [`${server.origin}/authored`], author)).toEqual([
      expect.objectContaining({ title: 'authored', imageUrl: null }),
    ]);
    expect(await platformFilesOf(AUTHORED)).toEqual([]);
  });

  it('leaves out of a message the image of a cached preview that was purged meanwhile', async () => {
    const image = (await preview(`${server.origin}/gone`)).json().imageUrl as string;
    await h.runtime.pool.query('DELETE FROM media_files WHERE id = $1', [imageIdOf(image)]);
    const message = { kind: 'channel' as const, channelId: randomUUID(), messageId: randomUUID() };
    const previews = await previewLinksOf(h.deps, [`${server.origin}/gone`], randomUUID());
    await withTx(h.runtime.pool, (tx) => publishEmbeds(tx, message, previews));
    const { rows } = await h.runtime.pool.query(
      "SELECT payload->'data'->'embeds' AS embeds FROM outbox WHERE payload->'data'->'target'->>'messageId' = $1",
      [message.messageId],
    );
    expect(rows).toEqual([{ embeds: [expect.objectContaining({ url: `${server.origin}/gone`, title: 'gone', imageUrl: null })] }]);
  });
});
