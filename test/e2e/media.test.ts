import { createHash, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { api, gateway, newUser, type TestUser } from './helpers.ts';

const MIB = 1024 * 1024;
/** The media service's default MEDIA_MAX_UPLOAD_BYTES, which the e2e platform keeps. */
const LIMIT = 25 * MIB;

async function upload(user: TestUser | undefined, data: Uint8Array, filename: string) {
  const form = new FormData();
  form.append('file', new Blob([data]), filename);
  const headers: Record<string, string> = { 'x-forwarded-for': user?.ip ?? '10.9.9.9' };
  if (user) headers.authorization = `Bearer ${user.token}`;
  const res = await fetch(`${gateway}/v1/media`, { method: 'POST', headers, body: form });
  // biome-ignore lint/suspicious/noExplicitAny: tests read whatever the answer holds and assert on it
  return { status: res.status, body: (await res.json()) as any };
}

describe('media through the gateway', () => {
  it('passes an upload of exactly the 25 MiB limit through the gateway and serves it back without a token', async () => {
    const user = await newUser('media');
    const data = randomBytes(LIMIT);
    const res = await upload(user, data, 'big file.bin');
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ filename: 'big_file.bin', size: LIMIT, contentType: 'application/octet-stream' });
    expect(res.body.url).toBe(`${gateway}/v1/media/${res.body.id}/big_file.bin`);

    const served = await fetch(res.body.url);
    expect(served.status).toBe(200);
    expect(served.headers.get('content-length')).toBe(String(LIMIT));
    const bytes = Buffer.from(await served.arrayBuffer());
    expect(createHash('sha256').update(bytes).digest('hex')).toBe(createHash('sha256').update(data).digest('hex'));

    const range = await fetch(res.body.url, { headers: { range: 'bytes=100-199' } });
    expect(range.status).toBe(206);
    expect(Buffer.from(await range.arrayBuffer())).toEqual(data.subarray(100, 200));
  });

  it('answers 413 through the gateway for one byte over the limit, and the next upload still goes through', async () => {
    const user = await newUser('media');
    const res = await upload(user, randomBytes(LIMIT + 1), 'over.bin');
    expect(res.status).toBe(413);
    expect(res.body).toEqual({ error: expect.stringContaining('upload limit') });
    const mine = await upload(user, Buffer.from('x'), 'after.txt');
    expect(mine.status).toBe(201);
  });

  it('answers 401 to an upload without a token', async () => {
    const res = await upload(undefined, Buffer.from('x'), 'anon.txt');
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ error: expect.any(String) });
  });

  it('answers the record to its uploader and 404 to another user', async () => {
    const [owner, other] = await Promise.all([newUser('media'), newUser('media')]);
    const { body } = await upload(owner, Buffer.from('hello'), 'hello.txt');
    const mine = await api('GET', `/v1/media/${body.id}`, { user: owner });
    expect(mine.status).toBe(200);
    expect(mine.body).toMatchObject({ id: body.id, uploaderId: owner.id, filename: 'hello.txt', contentType: 'text/plain', size: 5 });
    const theirs = await api('GET', `/v1/media/${body.id}`, { user: other });
    expect(theirs.status).toBe(404);
    expect(theirs.body).toEqual({ error: 'File not found' });
  });
});
