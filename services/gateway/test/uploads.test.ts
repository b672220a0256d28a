import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { createTestIssuer, sendRaw, startGateway } from './helpers.ts';

// A media service on real HTTP that records each upload: what arrived, and whether it was cut
// short. `x-hold-ms` makes it read nothing for that long first, as a busy service would.
interface Upload {
  user: string;
  bytes: number;
  complete: boolean;
  cut: boolean;
}
const uploads: Upload[] = [];
const upstream = createServer((req, res) => {
  const upload: Upload = { user: String(req.headers['x-user']), bytes: 0, complete: false, cut: false };
  uploads.push(upload);
  if (req.headers['x-too-large']) {
    // As media does past its size limit: the answer goes before the body has ended.
    res.writeHead(413, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'too large' }));
    return;
  }
  if (req.headers['x-stream-answer']) {
    // An answer under way while the upload still comes: its end follows 2 s later.
    req.resume();
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.write('first,');
    setTimeout(() => res.end('second'), 2_000);
    return;
  }
  const hold = Number(req.headers['x-hold-ms'] ?? 0);
  if (hold > 0) {
    req.pause();
    setTimeout(() => req.resume(), hold);
  }
  req.on('data', (chunk: Buffer) => {
    upload.bytes += chunk.length;
  });
  req.once('close', () => {
    upload.cut = !req.complete;
  });
  req.once('end', () => {
    upload.complete = true;
    res.writeHead(201, { 'content-type': 'application/json' }).end(JSON.stringify({ bytes: upload.bytes }));
  });
});
await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
const issuer = await createTestIssuer();
const gateway = await startGateway({
  upstreamUrl: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`,
  keys: issuer.keys,
  env: { BODY_IDLE_TIMEOUT_MS: '1000', UPLOAD_MIN_BYTES_PER_SECOND: '1000', UPLOADS_IN_FLIGHT_PER_USER: '2', UPLOADS_IN_FLIGHT: '3' },
});
const address = await gateway.app.listen({ port: 0, host: '127.0.0.1' });
afterAll(async () => {
  await gateway.close();
  upstream.closeAllConnections();
  await new Promise((resolve) => upstream.close(resolve));
});

const boundary = 'upload-boundary';
const part = (bytes: number) =>
  `--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="a.bin"\r\n\r\n${'a'.repeat(bytes)}\r\n--${boundary}--\r\n`;
const uploadsOf = (user: string) => uploads.filter((upload) => upload.user === user);
const statusLine = (text: string) => text.split('\r\n')[0];
/** What reaches the service passes Redis, the token check and the proxy first: a loaded machine may take seconds. */
const WAIT = { timeout: 10_000 };

/** A user with a token of their own; the upstream sees who sent each upload. */
async function uploader() {
  const id = randomUUID();
  const token = await issuer.sign(id);
  const head = (length: number) =>
    `POST /v1/media HTTP/1.1\r\nhost: gw\r\nauthorization: Bearer ${token}\r\nx-user: ${id}\r\n` +
    `content-type: multipart/form-data; boundary=${boundary}\r\ncontent-length: ${length}\r\n\r\n`;
  const send = (body: string | ReadableStream<Uint8Array>, extra: Record<string, string> = {}) =>
    fetch(`${address}/v1/media`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'x-user': id, 'content-type': `multipart/form-data; boundary=${boundary}`, ...extra },
      body,
      duplex: 'half',
    } as RequestInit);
  /** An upload in flight until `finish`: 2 KiB every 50 ms (well above the pace), then its end. */
  const inFlight = () => {
    let finishing = false;
    const body = part(1_000);
    async function* chunks() {
      yield Buffer.from(body.slice(0, 500));
      while (!finishing) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        yield Buffer.from(' '.repeat(2_048));
      }
      yield Buffer.from(body.slice(500));
    }
    return { answer: send(ReadableStream.from(chunks())), finish: () => (finishing = true) };
  };
  return { id, head, send, inFlight };
}

describe('uploads, which stream through to the service', () => {
  it('answers 408 {"error"} to an upload that stops arriving, closes the connection and cuts the request to the service', async () => {
    const user = await uploader();
    const body = part(2_000);
    const text = await sendRaw(address, [user.head(body.length) + body.slice(0, 200)]);
    expect(statusLine(text)).toBe('HTTP/1.1 408 Request Timeout');
    expect(text.toLowerCase()).toContain('connection: close');
    expect(text).toContain('{"error":"The upload stopped arriving"}');
    await vi.waitFor(() => expect(uploadsOf(user.id)).toEqual([{ user: user.id, bytes: 200, complete: false, cut: true }]), WAIT);
  });

  it('answers 408 to an upload that keeps coming below UPLOAD_MIN_BYTES_PER_SECOND, never pausing for the idle time', async () => {
    const user = await uploader();
    const body = part(2_000);
    // A byte every 100 ms (the idle limit is 1 s); 1,000 bytes a second are due after 1 s of grace.
    const trickle = [user.head(body.length) + body.slice(0, 100), ...body.slice(100, 200).split('')];
    const started = Date.now();
    const text = await sendRaw(address, trickle, 100);
    expect(statusLine(text)).toBe('HTTP/1.1 408 Request Timeout');
    expect(text).toContain('{"error":"The upload is arriving too slowly"}');
    expect(Date.now() - started).toBeLessThan(8_000);
    await vi.waitFor(() => expect(uploadsOf(user.id)).toMatchObject([{ complete: false, cut: true }]), WAIT);
    expect(uploadsOf(user.id)[0]?.bytes).toBeLessThan(200);
  });

  it("passes on the service's answer that comes before the upload ended, while the client is still sending", async () => {
    const user = await uploader();
    const body = part(4_000);
    const head = user.head(body.length).replace('\r\n\r\n', '\r\nx-too-large: yes\r\n\r\n');
    // The rest comes slowly, below the pace: the service's answer is the one that counts.
    const chunks = [head + body.slice(0, 1_000), ...Array.from({ length: 15 }, (_, i) => body.slice(1_000 + i * 10, 1_010 + i * 10))];
    const text = await sendRaw(address, chunks, 100);
    expect(statusLine(text)).toBe('HTTP/1.1 413 Payload Too Large');
    expect(text).toContain('{"error":"too large"}');
    expect(text).not.toContain('408');
  });

  it('does not cut an answer the service has begun, however slowly the upload still comes', async () => {
    const user = await uploader();
    const body = part(4_000);
    const head = user.head(body.length).replace('\r\n\r\n', '\r\nx-stream-answer: yes\r\n\r\n');
    // 100 bytes a second after the first 100: the pace rule would cut it after about 1.1 s.
    const chunks = [head + body.slice(0, 100), ...Array.from({ length: 25 }, (_, i) => body.slice(100 + i * 10, 110 + i * 10))];
    const text = await sendRaw(address, chunks, 100, 4_000);
    expect(statusLine(text)).toBe('HTTP/1.1 200 OK');
    expect(text).toContain('first,');
    expect(text).toContain('second');
  });

  it('does not count against the client the time the service does not read', async () => {
    const user = await uploader();
    // More than the sockets between the gateway and the service hold, sent at once; the service
    // reads nothing for 2.5 s, more than twice the idle limit.
    const body = part(16 * 1024 * 1024);
    const res = await user.send(body, { 'x-hold-ms': '2500' });
    expect(res.status).toBe(201);
    expect(await res.json()).toEqual({ bytes: body.length });
  });

  it('lets a user have UPLOADS_IN_FLIGHT_PER_USER uploads at once: the next is 429 before the service hears of it', async () => {
    const [user, other] = [await uploader(), await uploader()];
    const first = [user.inFlight(), user.inFlight()];
    try {
      await vi.waitFor(() => expect(uploadsOf(user.id)).toHaveLength(2), WAIT);
      const refused = await user.send(part(1_000));
      expect(refused.status).toBe(429);
      expect(refused.headers.get('retry-after')).toBe('1');
      expect(refused.headers.get('connection')).toBe('close');
      expect(await refused.json()).toEqual({ error: 'Too many uploads at once: at most 2' });
      // Another user's upload is not held back by them.
      expect((await other.send(part(1_000))).status).toBe(201);
      expect(uploadsOf(user.id)).toHaveLength(2);
    } finally {
      for (const upload of first) upload.finish();
    }
    for (const res of await Promise.all(first.map((upload) => upload.answer))) expect(res.status).toBe(201);
    // Answered, they count no more.
    expect((await user.send(part(1_000))).status).toBe(201);
    expect(uploadsOf(user.id).map((u) => u.complete)).toEqual([true, true, true]);
  });

  it('lets all users together have UPLOADS_IN_FLIGHT at once: the next is 429 before the service hears of it', async () => {
    const [first, second, third] = [await uploader(), await uploader(), await uploader()];
    const held = [first.inFlight(), first.inFlight(), second.inFlight()];
    try {
      await vi.waitFor(() => expect([...uploadsOf(first.id), ...uploadsOf(second.id)]).toHaveLength(3), WAIT);
      const refused = await third.send(part(1_000));
      expect(refused.status).toBe(429);
      expect(refused.headers.get('retry-after')).toBe('1');
      expect(await refused.json()).toEqual({ error: 'Too many uploads in progress; try again shortly' });
      expect(uploadsOf(third.id)).toEqual([]);
    } finally {
      for (const upload of held) upload.finish();
    }
    for (const res of await Promise.all(held.map((upload) => upload.answer))) expect(res.status).toBe(201);
    expect((await third.send(part(1_000))).status).toBe(201);
  });

  it('counts no more an upload whose client went away', async () => {
    const user = await uploader();
    const body = part(2_000);
    // Two uploads that stop halfway, then hang up before the idle limit.
    const sockets = [0, 1].map(() => connect(Number(new URL(address).port), '127.0.0.1').on('error', () => {}));
    for (const socket of sockets) socket.write(user.head(body.length) + body.slice(0, 100));
    await vi.waitFor(() => expect(uploadsOf(user.id)).toHaveLength(2), WAIT);
    for (const socket of sockets) socket.destroy();
    await vi.waitFor(() => expect(uploadsOf(user.id).map((u) => u.cut)).toEqual([true, true]), WAIT);
    const next = [user.inFlight(), user.inFlight()];
    for (const upload of next) upload.finish();
    for (const res of await Promise.all(next.map((upload) => upload.answer))) expect(res.status).toBe(201);
  });
});
