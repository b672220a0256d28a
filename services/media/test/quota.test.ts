import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMediaHarness, type MediaHarness, oneFile } from './harness.ts';

/**
 * Issue 16, item 12: per-user upload quotas, files per hour and bytes per day, on the service's
 * clock (injected here, so an hour passes without waiting one).
 */
const FILE_LIMIT = 2_000;
const BYTES_PER_DAY = 5_000;
const FILES_PER_HOUR = 3;
const HOUR = 3_600_000;
let clock = Date.parse('2026-01-05T10:00:00Z');
let h: MediaHarness;

beforeAll(async () => {
  h = await createMediaHarness({
    now: () => new Date(clock),
    env: {
      MEDIA_MAX_UPLOAD_BYTES: String(FILE_LIMIT),
      MEDIA_QUOTA_BYTES_PER_DAY: String(BYTES_PER_DAY),
      MEDIA_QUOTA_FILES_PER_HOUR: String(FILES_PER_HOUR),
    },
  });
});
afterAll(() => h.close());

async function upload(userId: string, size: number) {
  const body = oneFile(randomBytes(size), 'q.bin');
  const res = await h.app.inject({
    method: 'POST',
    url: '/v1/media',
    headers: { ...(await h.auth(userId)), ...body.headers },
    payload: body.payload,
  });
  return { status: res.statusCode, body: res.json(), retryAfter: res.headers['retry-after'] };
}
const stored = async () => ({ rows: (await h.rows()).length, objects: (await h.objectKeys()).length });

describe('files per hour', () => {
  it('answers the upload over the hourly count 429 with Retry-After and the quota’s name, and stores nothing', async () => {
    const user = randomUUID();
    clock += 24 * HOUR;
    for (let i = 0; i < FILES_PER_HOUR; i++) {
      expect((await upload(user, 10)).status).toBe(201);
      clock += 10 * 60_000;
    }
    const before = await stored();
    // The first upload was 30 minutes ago: it leaves the hour in 30 minutes.
    expect(await upload(user, 10)).toEqual({
      status: 429,
      body: { error: `Upload quota exceeded: at most ${FILES_PER_HOUR} files per hour` },
      retryAfter: String(30 * 60),
    });
    expect(await stored()).toEqual(before);

    expect((await upload(randomUUID(), 10)).status).toBe(201);
    clock += 30 * 60_000;
    expect((await upload(user, 10)).status).toBe(201);
  });
});

describe('bytes per day', () => {
  it('answers 429 for a file that does not fit in the day’s bytes, 413 for one over the file limit, and stores nothing', async () => {
    const user = randomUUID();
    clock += 24 * HOUR;
    expect((await upload(user, 2_000)).status).toBe(201);
    clock += 2 * HOUR;
    expect((await upload(user, 2_000)).status).toBe(201);
    clock += 2 * HOUR;
    const before = await stored();

    // 4,000 of 5,000 used: 1,001 bytes do not fit; they fit once the first file leaves the day (in 20 hours).
    const over = await upload(user, 1_001);
    expect(over).toEqual({
      status: 429,
      body: { error: `Upload quota exceeded: at most ${BYTES_PER_DAY} bytes per day` },
      retryAfter: String(20 * 3_600),
    });
    // A file over the size limit stays a 413, quota or not.
    const oversize = await upload(user, FILE_LIMIT + 1);
    expect(oversize.status).toBe(413);
    expect(oversize.body.error).toMatch(/upload limit/);
    expect(await stored()).toEqual(before);
    expect(await h.incompleteUploads()).toEqual([]);

    expect((await upload(user, 1_000)).status).toBe(201);
    // Now the day is full: refused before the body is read.
    expect((await upload(user, 1)).status).toBe(429);
    clock += 20 * HOUR;
    expect((await upload(user, 1_001)).status).toBe(201);
  });

  it('counts concurrent uploads exactly: of parallel uploads over the quota, only those that fit are kept', async () => {
    const user = randomUUID();
    clock += 48 * HOUR;
    const answers = await Promise.all(Array.from({ length: 3 }, () => upload(user, 2_000)));
    expect(answers.map((a) => a.status).sort()).toEqual([201, 201, 429]);
    const mine = (await h.rows()).filter((r) => r.uploader_id === user);
    expect(mine.reduce((sum, r) => sum + Number(r.size), 0)).toBe(4_000);
    expect((await h.objectKeys()).length).toBe((await h.rows()).length);
  });
});
