import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sweepOrphans } from '../src/domain/sweeper.ts';
import { createMediaHarness, type MediaHarness, oneFile } from './harness.ts';

/**
 * Issue 16, item 12: the sweeper removes objects that no committed record names once they are an
 * hour old, and records whose object is gone. Real MinIO; the sweep is told the time, so "an hour
 * later" needs no waiting.
 */
const HOUR = 3_600_000;
let h: MediaHarness;

beforeAll(async () => {
  h = await createMediaHarness();
});
afterAll(() => h.close());

async function upload() {
  const body = oneFile(randomBytes(64), 'kept.bin');
  const res = await h.app.inject({
    method: 'POST',
    url: '/v1/media',
    headers: { ...(await h.auth(randomUUID())), ...body.headers },
    payload: body.payload,
  });
  expect(res.statusCode).toBe(201);
  return res.json() as { id: string; url: string };
}

describe('sweepOrphans', () => {
  it('removes an unrecorded object and a record without object once they are older than the age, and nothing else', async () => {
    const kept = await upload();
    const lost = await upload();
    await h.s3.removeObject(h.bucket, lost.id);
    const orphan = randomUUID();
    await h.s3.putObject(h.bucket, orphan, Buffer.from('left behind by a crash between store and commit'));
    const ids = async () => ({ objects: (await h.objectKeys()).sort(), rows: (await h.rows()).map((r) => r.id).sort() });

    // Young: the orphan may be an upload whose record is about to commit; the record's object may be arriving.
    const early = await sweepOrphans(h.deps, { now: new Date(), olderThanMs: HOUR });
    expect(early).toEqual({ objectsRemoved: 0, recordsRemoved: 0, uploadsAborted: 0 });
    expect(await ids()).toEqual({ objects: [kept.id, orphan].sort(), rows: [kept.id, lost.id].sort() });

    const later = await sweepOrphans(h.deps, { now: new Date(Date.now() + HOUR + 60_000), olderThanMs: HOUR });
    expect(later).toEqual({ objectsRemoved: 1, recordsRemoved: 1, uploadsAborted: 0 });
    expect(await ids()).toEqual({ objects: [kept.id], rows: [kept.id] });
    expect((await h.app.inject({ method: 'GET', url: new URL(kept.url).pathname })).statusCode).toBe(200);
    expect((await h.app.inject({ method: 'GET', url: new URL(lost.url).pathname })).statusCode).toBe(404);

    // Nothing left to do: a second sweep changes nothing.
    expect(await sweepOrphans(h.deps, { now: new Date(Date.now() + HOUR + 60_000), olderThanMs: HOUR })).toEqual({
      objectsRemoved: 0,
      recordsRemoved: 0,
      uploadsAborted: 0,
    });
  });

  it('walks a bucket and a table larger than one page of either', async () => {
    const uploads = await Promise.all(Array.from({ length: 7 }, () => upload()));
    const orphans = Array.from({ length: 5 }, () => randomUUID());
    for (const key of orphans) await h.s3.putObject(h.bucket, key, Buffer.from('x'));
    for (const gone of uploads.slice(0, 3)) await h.s3.removeObject(h.bucket, gone.id);
    const result = await sweepOrphans(h.deps, { now: new Date(Date.now() + 2 * HOUR), olderThanMs: HOUR, pageSize: 2 });
    expect(result).toEqual({ objectsRemoved: 5, recordsRemoved: 3, uploadsAborted: 0 });
    const keys = await h.objectKeys();
    expect(keys.sort()).toEqual((await h.rows()).map((r) => r.id).sort());
    for (const u of uploads.slice(3)) expect(keys).toContain(u.id);
  });

  it('aborts a multipart upload its process never finished, once it is older than the age', async () => {
    const key = randomUUID();
    await h.s3.initiateNewMultipartUpload(h.bucket, key, {});
    expect(await h.incompleteUploads()).toEqual([key]);
    expect((await sweepOrphans(h.deps, { now: new Date(), olderThanMs: HOUR })).uploadsAborted).toBe(0);
    expect(await h.incompleteUploads()).toEqual([key]);
    expect((await sweepOrphans(h.deps, { now: new Date(Date.now() + 2 * HOUR), olderThanMs: HOUR })).uploadsAborted).toBe(1);
    expect(await h.incompleteUploads()).toEqual([]);
  });
});
