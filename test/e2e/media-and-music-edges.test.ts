import { randomBytes } from 'node:crypto';
import { until } from '@chat/testkit';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { dsf } from '../../services/media/test/audio.ts';
import { PNG_1X1 } from '../../services/media/test/harness.ts';
import { html, type Page, redirect, startPageServer } from '../../services/media/test/page-server.ts';
import { api, gateway, newUser, postMessage, publicServer, rawRequest, type TestUser } from './helpers.ts';

// biome-ignore lint/suspicious/noExplicitAny: tests read whatever the answer holds and assert on it
type Answer = { status: number; headers: Headers; body: any; text: string };

async function upload(user: TestUser, data: Uint8Array, filename: string, headers: Record<string, string> = {}): Promise<Answer> {
  const form = new FormData();
  form.append('file', new Blob([data]), filename);
  const res = await fetch(`${gateway}/v1/media`, {
    method: 'POST',
    headers: { 'x-forwarded-for': user.ip, authorization: `Bearer ${user.token}`, ...headers },
    body: form,
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text.startsWith('{') ? JSON.parse(text) : undefined, text };
}

async function uploaded(user: TestUser, data: Uint8Array, filename: string) {
  const res = await upload(user, data, filename);
  expect(res.status, res.text).toBe(201);
  return res.body as { id: string; url: string; filename: string; contentType: string; size: number };
}

/** A multipart body written by hand, one file part. */
function multipart(filename: string, data: Buffer) {
  const boundary = `----e2e${randomBytes(6).toString('hex')}`;
  const body = Buffer.concat([
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\n`),
    Buffer.from('Content-Type: application/octet-stream\r\n\r\n'),
    data,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
  return { body, contentType: `multipart/form-data; boundary=${boundary}` };
}

describe('uploads served through the gateway', () => {
  it('serves HTML and SVG uploaded under image names as attachments, with nosniff and media’s sandbox CSP', async () => {
    const user = await newUser('xss');
    const page = await uploaded(user, Buffer.from('<html><script>alert(document.domain)</script></html>'), 'cat.png');
    const svg = await uploaded(user, Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"></svg>'), 'x.jpg');
    expect([page.contentType, svg.contentType]).toEqual(['text/html', 'image/svg+xml']);
    for (const file of [page, svg]) {
      const served = await fetch(file.url);
      expect(served.status).toBe(200);
      expect(served.headers.get('content-type')).toBe(file.contentType);
      expect(served.headers.get('content-disposition')).toMatch(/^attachment; /);
      expect(served.headers.get('x-content-type-options')).toBe('nosniff');
      expect(served.headers.get('content-security-policy')).toMatch(/sandbox/);
      expect(served.headers.get('content-security-policy')).toMatch(/default-src 'none'/);
    }
  });

  it('keeps a file name of quotes, semicolons and filename* to one quoted filename in Content-Disposition', async () => {
    const user = await newUser('name');
    const file = await uploaded(user, Buffer.from('<html><body>x</body></html>'), `a";filename*=UTF-8''evil.html; x=".html`);
    const served = await fetch(file.url);
    expect(served.status).toBe(200);
    const disposition = served.headers.get('content-disposition') as string;
    expect(file.filename).not.toMatch(/["\\]/);
    expect(disposition).toBe(`attachment; filename="${file.filename}"`);
  });

  it('serves files whose names need percent-encoding at the url the upload answered', async () => {
    const user = await newUser('enc');
    for (const name of ['résumé ü.txt', '日本語.txt', "a+b&c=d'(1)!~.txt", 'x;y,z@$.txt', 'ﬁle.txt']) {
      const file = await uploaded(user, Buffer.from(`hello ${name}`), name);
      const served = await fetch(file.url);
      expect(served.status, `${name} at ${file.url}`).toBe(200);
      expect(await served.text()).toBe(`hello ${name}`);
    }
  });

  it('serves, without a token, files whose percent-encoded names run past 100 characters', async () => {
    const user = await newUser('long');
    for (const name of [`${'n'.repeat(10_000)}.txt`, `${'😀'.repeat(20)}.txt`, `${'é'.repeat(40)}.txt`]) {
      const file = await uploaded(user, Buffer.from('long'), name);
      expect(new URL(file.url).pathname.length).toBeGreaterThan(100);
      const served = await fetch(file.url);
      expect(served.status, `${file.url.length} characters`).toBe(200);
      expect(await served.text()).toBe('long');
    }
  });

  it('answers HEAD with the length and ETag and no body', async () => {
    const user = await newUser('head');
    const file = await uploaded(user, Buffer.from('0123456789'), 'digits.txt');
    const head = await fetch(file.url, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-length')).toBe('10');
    expect(head.headers.get('etag')).toMatch(/^"[0-9a-f]{64}"$/);
    expect(await head.text()).toBe('');
  });

  it('answers an open range and one past the end with what there is, and 304 to a weak ETag in a list', async () => {
    const user = await newUser('range');
    const file = await uploaded(user, Buffer.from('0123456789'), 'digits.txt');
    for (const range of ['bytes=8-', 'bytes=8-100']) {
      const res = await fetch(file.url, { headers: { range } });
      expect({ range, status: res.status, contentRange: res.headers.get('content-range'), body: await res.text() }).toEqual({
        range,
        status: 206,
        contentRange: 'bytes 8-9/10',
        body: '89',
      });
    }
    const etag = (await fetch(file.url, { method: 'HEAD' })).headers.get('etag') as string;
    const cached = await fetch(file.url, { headers: { 'if-none-match': `"other", W/${etag}` } });
    expect(cached.status).toBe(304);
    expect(await cached.text()).toBe('');
    const changed = await fetch(file.url, { headers: { 'if-none-match': '"other"' } });
    expect(changed.status).toBe(200);
  });

  it('stores an empty file, serves it as 0 bytes, and answers 416 to a range of it', async () => {
    const user = await newUser('empty');
    const file = await uploaded(user, Buffer.alloc(0), 'empty.bin');
    expect(file.size).toBe(0);
    const served = await fetch(file.url);
    expect(served.status).toBe(200);
    expect(served.headers.get('content-length')).toBe('0');
    expect((await served.arrayBuffer()).byteLength).toBe(0);
    const range = await fetch(file.url, { headers: { range: 'bytes=0-0' } });
    expect(range.status).toBe(416);
    expect(range.headers.get('content-range')).toBe('bytes */0');
  });

  it('takes a chunked upload without Content-Length', async () => {
    const user = await newUser('chunk');
    const data = randomBytes(300_000);
    const { body, contentType } = multipart('chunked.bin', data);
    const res = await rawRequest(
      'POST',
      '/v1/media',
      { 'content-type': contentType, authorization: `Bearer ${user.token}`, 'x-forwarded-for': user.ip, 'transfer-encoding': 'chunked' },
      body,
    );
    expect(res.status, res.text).toBe(201);
    const file = JSON.parse(res.text) as { url: string; size: number };
    expect(file.size).toBe(data.length);
    expect(Buffer.from(await (await fetch(file.url)).arrayBuffer())).toEqual(data);
  });

  it('replays a retried upload under its Idempotency-Key and answers 422 to another file under it', async () => {
    const user = await newUser('idem');
    const key = `upload-${randomBytes(6).toString('hex')}`;
    const first = await upload(user, Buffer.from('same'), 'same.txt', { 'idempotency-key': key });
    const again = await upload(user, Buffer.from('same'), 'same.txt', { 'idempotency-key': key });
    expect([first.status, again.status]).toEqual([201, 201]);
    expect(again.body).toEqual(first.body);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    const other = await upload(user, Buffer.from('diff'), 'same.txt', { 'idempotency-key': key });
    expect(other.status).toBe(422);
    expect(other.body).toEqual({ error: expect.any(String) });
  });
});

let pages: Awaited<ReturnType<typeof startPageServer>>;
let reader: TestUser;
const drips = new Set<NodeJS.Timeout>();

/** A page that sends its head at once, then one byte every 200 ms for a minute. */
const drip: Page = (_req, res) => {
  res.writeHead(200, { 'content-type': 'text/html' });
  res.write('<html><head><title>Slow');
  let sent = 0;
  const timer = setInterval(() => {
    if (sent++ > 300 || res.destroyed) {
      clearInterval(timer);
      res.end('</title></head></html>');
      return;
    }
    res.write(' ');
  }, 200);
  drips.add(timer);
};

/** A 10 MiB page whose title comes first. */
const big: Page = (_req, res) => {
  res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
  res.write('<html><head><meta property="og:title" content="Big page"></head><body>');
  const chunk = Buffer.alloc(64 * 1024, 'a');
  let sent = 0;
  const more = () => {
    while (sent < 10 * 1024 * 1024) {
      sent += chunk.length;
      if (!res.write(chunk)) return res.once('drain', more);
    }
    res.end('</body></html>');
  };
  // The preview stops reading after the head: the connection goes away mid-body.
  res.on('error', () => {});
  more();
};

const latin1 =
  (contentType: string): Page =>
  (_req, res) =>
    res
      .writeHead(200, { 'content-type': contentType })
      .end(Buffer.concat([Buffer.from('<html><head><title>Caf'), Buffer.from([0xe9]), Buffer.from('</title></head></html>')]));

beforeAll(async () => {
  pages = await startPageServer({
    '/drip': drip,
    '/silent': () => {},
    '/big': big,
    '/latin1': latin1('text/html; charset=iso-8859-1'),
    '/unknown-charset': html('<html><head><title>Plain é</title></head></html>', 'text/html; charset=x-no-such-charset'),
    '/svg-image': (req, res) =>
      html(`<meta property="og:title" content="With svg"><meta property="og:image" content="${pages.origin}/image.svg">`)(req, res),
    '/image.svg': html('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>', 'image/png'),
    '/pixel.png': (_req, res) => res.writeHead(200, { 'content-type': 'image/png' }).end(PNG_1X1),
    '/r6': redirect('/r5'),
    '/r5': redirect('/r4'),
    '/r4': redirect('/r3'),
    '/r3': redirect('/r2'),
    '/r2': redirect('/r1'),
    '/r1': redirect('/article'),
    '/article': html('<meta property="og:title" content="An article">'),
    '/to-file': redirect('file:///etc/passwd'),
    '/to-js': redirect('javascript:alert(1)'),
    '/error500': (_req, res) => res.writeHead(500, { 'content-type': 'text/html' }).end('<title>oops</title>'),
  });
  for (let i = 0; i < 20; i++) pages.pages[`/many${i}`] = html(`<meta property="og:title" content="Many ${i}">`);
  reader = await newUser('preview');
});
afterAll(async () => {
  for (const timer of drips) clearInterval(timer);
  await pages?.close();
});

const preview = (url: string) => api('GET', `/v1/link-preview?url=${encodeURIComponent(url)}`, { user: reader });

describe('link previews of slow, large and odd pages', () => {
  it('gives up within the deadline on a page that drips its body and on one that never answers', async () => {
    const timed = async (path: string) => {
      const started = Date.now();
      const res = await preview(`${pages.origin}${path}`);
      return { status: res.status, body: res.body, tookUnder8s: Date.now() - started < 8_000 };
    };
    const [dripping, silent] = await Promise.all([timed('/drip'), timed('/silent')]);
    const gaveUp = { status: 400, body: { error: 'The link took too long to answer' }, tookUnder8s: true };
    expect({ dripping, silent }).toEqual({ dripping: gaveUp, silent: gaveUp });
  });

  it('previews a 10 MiB page from its head', async () => {
    const res = await preview(`${pages.origin}/big`);
    expect(res.status).toBe(200);
    expect(res.body.title).toBe('Big page');
  });

  it('decodes a page by the Latin-1 charset its Content-Type names, and by UTF-8 when the named charset is unknown', async () => {
    const latin = await preview(`${pages.origin}/latin1`);
    expect([latin.status, latin.body.title]).toEqual([200, 'Café']);
    const unknown = await preview(`${pages.origin}/unknown-charset`);
    expect([unknown.status, unknown.body.title]).toEqual([200, 'Plain é']);
  });

  it('keeps no og:image that is SVG, whatever type the site declares, and serves a kept image as image/png', async () => {
    const svg = await preview(`${pages.origin}/svg-image`);
    expect(svg.status).toBe(200);
    expect(svg.body).toMatchObject({ title: 'With svg', imageUrl: null });
    const pixel = await preview(`${pages.origin}/pixel.png`);
    expect(pixel.body.type).toBe('image');
    const kept = await fetch(pixel.body.imageUrl);
    expect(kept.status).toBe(200);
    expect(kept.headers.get('content-type')).toBe('image/png');
    expect(Buffer.from(await kept.arrayBuffer())).toEqual(PNG_1X1);
  });

  it('follows five redirects but not six, and answers 400 for file: and javascript: Locations and for a 500 page', async () => {
    const followed = await preview(`${pages.origin}/r5`);
    expect([followed.status, followed.body.title]).toEqual([200, 'An article']);
    const outcomes: Record<string, unknown> = {};
    for (const path of ['/r6', '/to-file', '/to-js', '/error500']) {
      const res = await preview(`${pages.origin}${path}`);
      outcomes[path] = [res.status, res.body?.error];
    }
    expect(outcomes).toEqual({
      '/r6': [400, 'The link redirects too many times'],
      '/to-file': [400, 'url must be an http or https url'],
      '/to-js': [400, 'url must be an http or https url'],
      '/error500': [400, 'The link answered with status 500'],
    });
  });
});

describe('embeds of a message with many links', () => {
  it('fetches five of twenty links and shows their five embeds', async () => {
    const owner = await newUser('embeds');
    const { textId } = await publicServer(owner);
    const links = Array.from({ length: 20 }, (_, i) => `${pages.origin}/many${i}`);
    await postMessage(owner, textId, links.join(' '));
    // Embeds arrive once media has fetched the pages and guilds has stored them.
    await until(async () => ((await api('GET', `/v1/channels/${textId}/messages`, { user: owner })).body[0]?.embeds ?? []).length > 0, {
      timeoutMs: 15_000,
      what: 'the embeds reach the message',
    });
    const [message] = (await api('GET', `/v1/channels/${textId}/messages`, { user: owner })).body;
    expect(message.embeds.map((e: { title: string }) => e.title)).toEqual(Array.from({ length: 5 }, (_, i) => `Many ${i}`));
    expect(links.map((_, i) => pages.hits(`/many${i}`))).toEqual([...Array(5).fill(1), ...Array(15).fill(0)]);
  });
});

/** Owner of a fresh server (with `members`), in its voice channel. */
async function stage(owner: TestUser, members: TestUser[] = []) {
  const server = await publicServer(owner, members);
  expect((await api('POST', '/v1/voice/join', { user: owner, body: { channelId: server.voiceId } })).status).toBe(200);
  return { ...server, target: { channelId: server.voiceId, serverId: server.serverId } };
}

/**
 * The URL of the music database holding `channelId`'s player. The platform names its databases
 * t_e2e_music_<random>, and keeps no API that shows whether a player is left.
 */
async function musicDatabaseOf(channelId: string): Promise<string> {
  const admin = inject('backing').postgresUrl;
  const client = new pg.Client({ connectionString: admin });
  await client.connect();
  try {
    const names = (await client.query("SELECT datname FROM pg_database WHERE datname LIKE 't_e2e_music_%'")).rows.map((r) => r.datname);
    for (const name of names) {
      const url = new URL(admin);
      url.pathname = `/${name}`;
      const db = new pg.Client({ connectionString: url.toString() });
      try {
        await db.connect();
        if ((await db.query('SELECT 1 FROM players WHERE channel_id = $1', [channelId])).rowCount) return url.toString();
      } catch {
        // The database of another run, being dropped.
      } finally {
        await db.end().catch(() => {});
      }
    }
    throw new Error(`no music database holds a player of ${channelId}`);
  } finally {
    await client.end();
  }
}

/** How many players and tracks of `channelId` the music database keeps. */
async function leftOf(databaseUrl: string, channelId: string) {
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    const { rows } = await db.query(
      `SELECT (SELECT count(*)::int FROM players WHERE channel_id = $1) AS players,
              (SELECT count(*)::int FROM tracks WHERE channel_id = $1) AS tracks`,
      [channelId],
    );
    return rows[0] as { players: number; tracks: number };
  } finally {
    await db.end();
  }
}

let owner: TestUser;
beforeAll(async () => {
  owner = await newUser('dj');
});

describe('music: track lengths claimed by uploaded files', () => {
  it('plays and queues files whose headers claim 2^62 s, 10^13 s or a negative length, their length unknown', async () => {
    const s = await stage(owner);
    const files = await Promise.all([
      uploaded(owner, dsf(2n ** 62n, 1), 'forever.dsf'),
      uploaded(owner, dsf(10n ** 13n, 1), 'long.dsf'),
      uploaded(owner, dsf(1000n, -1), 'negative.dsf'),
    ]);
    const [first, ...rest] = files;
    const play = await api('POST', '/v1/music/play', { user: owner, body: { ...s.target, url: first?.url } });
    expect(play.status, JSON.stringify(play.body)).toBe(200);
    expect(play.body.current).toMatchObject({ url: first?.url, durationMs: null });
    for (const file of rest) {
      const queued = await api('POST', '/v1/music/queue', { user: owner, body: { ...s.target, url: file.url } });
      expect(queued.status, JSON.stringify(queued.body)).toBe(201);
    }
    const player = (await api('GET', `/v1/music/${s.voiceId}`, { user: owner })).body;
    expect(player.queue.map((t: { url: string; durationMs: number | null }) => [t.url, t.durationMs])).toEqual(
      rest.map((f) => [f.url, null]),
    );
  });
});

describe('music: values out of range', () => {
  it('refuses lengths outside 1 s to a day, fractions of a second and a title with NUL (400), and plays nothing', async () => {
    const s = await stage(owner);
    const outcomes: Record<string, unknown> = {};
    for (const durationSeconds of [0, 86_401, 1.5, -5]) {
      const res = await api('POST', '/v1/music/play', {
        user: owner,
        body: { ...s.target, url: 'https://example.com/a.mp3', durationSeconds },
      });
      outcomes[`durationSeconds ${durationSeconds}`] = [res.status, res.body.error?.split(':')[0]];
    }
    const nul = await api('POST', '/v1/music/play', {
      user: owner,
      body: { ...s.target, url: 'https://example.com/a.mp3', title: 'a\u0000b' },
    });
    outcomes['title with NUL'] = [nul.status, nul.body.error];
    expect(outcomes).toEqual({
      'durationSeconds 0': [400, 'body.durationSeconds'],
      'durationSeconds 86401': [400, 'body.durationSeconds'],
      'durationSeconds 1.5': [400, 'body.durationSeconds'],
      'durationSeconds -5': [400, 'body.durationSeconds'],
      // Refused as every shown name is: a control character could break the line it is shown on.
      'title with NUL': [400, 'body.title: must not contain control, line-break or bidi-override characters'],
    });
    const player = (await api('GET', `/v1/music/${s.voiceId}`, { user: owner })).body;
    expect([player.current, player.queue]).toEqual([null, []]);
  });

  it('cannot remove a track of another channel’s queue through its own channel (404)', async () => {
    const [a, b] = [await stage(owner), await stage(owner)];
    // stage() left the owner in b's channel: only those in a channel may change its queue.
    const queued = await api('POST', '/v1/music/queue', { user: owner, body: { ...b.target, url: 'https://example.com/b.mp3' } });
    expect(queued.status).toBe(201);
    const trackId = queued.body.queue[0].id as string;
    expect((await api('POST', '/v1/voice/join', { user: owner, body: { channelId: a.voiceId } })).status).toBe(200);
    const removed = await api('DELETE', `/v1/music/${a.voiceId}/queue/${trackId}`, { user: owner });
    expect(removed.status).toBe(404);
    expect(removed.body).toEqual({ error: expect.any(String) });
    expect((await api('GET', `/v1/music/${b.voiceId}`, { user: owner })).body.queue.map((t: { id: string }) => t.id)).toEqual([trackId]);
  });
});

describe('music: who may see and control a player', () => {
  it('hides the player (404) from a connected member who then loses VIEW_CHANNEL on its channel', async () => {
    const member = await newUser('djm');
    const s = await stage(owner, [member]);
    expect((await api('POST', '/v1/voice/join', { user: member, body: { channelId: s.voiceId } })).status).toBe(200);
    const url = 'https://example.com/m.mp3';
    expect((await api('POST', '/v1/music/play', { user: member, body: { ...s.target, url } })).status).toBe(200);
    const VIEW_CHANNEL = 1n << 10n;
    const denied = await api('PUT', `/v1/channels/${s.voiceId}/permissions`, {
      user: owner,
      body: { userId: member.id, allowBits: 0, denyBits: Number(VIEW_CHANNEL) },
    });
    expect(denied.status).toBe(200);
    const outcomes = {
      read: (await api('GET', `/v1/music/${s.voiceId}`, { user: member })).status,
      skip: (await api('POST', '/v1/music/skip', { user: member, body: { ...s.target, url } })).status,
      stop: (await api('POST', '/v1/music/stop', { user: member, body: s.target })).status,
    };
    expect(outcomes).toEqual({ read: 404, skip: 404, stop: 404 });
    expect((await api('GET', `/v1/music/${s.voiceId}`, { user: owner })).body.current).toMatchObject({ url });
  });

  it('refuses (404) a member kicked from the server while connected', async () => {
    const member = await newUser('djk');
    const s = await stage(owner, [member]);
    expect((await api('POST', '/v1/voice/join', { user: member, body: { channelId: s.voiceId } })).status).toBe(200);
    const kicked = await api('DELETE', `/v1/servers/${s.serverId}/members/${member.id}`, { user: owner });
    expect(kicked.status).toBe(204);
    const play = await api('POST', '/v1/music/play', { user: member, body: { ...s.target, url: 'https://example.com/k.mp3' } });
    expect(play.status).toBe(404);
    expect((await api('GET', `/v1/music/${s.voiceId}`, { user: owner })).body.current).toBeNull();
  });
});

describe('music: a player whose channel or server is deleted', () => {
  /** A looping one-second track in a fresh server's voice channel, and the music database holding it. */
  async function loopingPlayer(loop: 'track' | 'queue') {
    const s = await stage(owner);
    const play = await api('POST', '/v1/music/play', {
      user: owner,
      body: { ...s.target, url: 'https://example.com/loop.mp3', durationSeconds: 1 },
    });
    expect(play.status).toBe(200);
    expect((await api('PATCH', `/v1/music/${s.voiceId}`, { user: owner, body: { loop } })).status).toBe(200);
    const database = await musicDatabaseOf(s.voiceId);
    expect(await leftOf(database, s.voiceId)).toEqual({ players: 1, tracks: 1 });
    return { ...s, database };
  }

  it('is removed with its queue when its voice channel is deleted', async () => {
    const s = await loopingPlayer('track');
    expect((await api('DELETE', `/v1/channels/${s.voiceId}`, { user: owner })).status).toBe(204);
    expect((await api('GET', `/v1/music/${s.voiceId}`, { user: owner })).status).toBe(404);
    // Music applies guilds' deletion event in its own time.
    await until(async () => (await leftOf(s.database, s.voiceId)).players === 0, { what: 'the player of the deleted channel is removed' });
    expect(await leftOf(s.database, s.voiceId)).toEqual({ players: 0, tracks: 0 });
  });

  it('is removed with its queue when its server is deleted', async () => {
    const s = await loopingPlayer('queue');
    expect((await api('DELETE', `/v1/servers/${s.serverId}`, { user: owner })).status).toBe(204);
    await until(async () => (await leftOf(s.database, s.voiceId)).players === 0, { what: 'the player of the deleted server is removed' });
    expect(await leftOf(s.database, s.voiceId)).toEqual({ players: 0, tracks: 0 });
  });
});
