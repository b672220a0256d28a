import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '@chat/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMediaHarness, type MediaHarness, type MinioOptions, oneFile, PNG_1X1 } from './harness.ts';

/**
 * A MinIO of this file's own, so that stopping it leaves the shared one (which other test files
 * use) alone. The binary is the one `go install github.com/minio/minio@latest` builds.
 */
const MINIO_BIN = process.env.MINIO_BIN ?? join(process.env.GOPATH ?? join(homedir(), 'go'), 'bin', 'minio');

let minio: { process: ChildProcess; dir: string; options: MinioOptions };
let h: MediaHarness;

beforeAll(async () => {
  minio = await startMinio();
  // No bucket yet: readiness must create it, as it does at start-up.
  h = await createMediaHarness({ minio: minio.options, createBucket: false });
}, 60_000);
afterAll(async () => {
  stopMinio();
  await h.close();
  rmSync(minio.dir, { recursive: true, force: true });
});

describe('media with MinIO up, then stopped', () => {
  it('creates the missing bucket when asked for readiness, and is ready', async () => {
    expect(await h.s3.bucketExists(h.bucket)).toBe(false);
    const res = await h.app.inject({ method: 'GET', url: '/health/ready' });
    expect(res.statusCode).toBe(200);
    expect(res.json().checks).toEqual({ postgres: 'ok', nats: 'ok', minio: 'ok' });
    expect(await h.s3.bucketExists(h.bucket)).toBe(true);
  });

  it('answers 503 to uploads and reads once MinIO is gone, records nothing, and readiness says so', async () => {
    const user = randomUUID();
    const before = oneFile(PNG_1X1, 'before.png');
    const stored = await h.app.inject({
      method: 'POST',
      url: '/v1/media',
      headers: { ...(await h.auth(user)), ...before.headers },
      payload: before.payload,
    });
    expect(stored.statusCode).toBe(201);

    stopMinio();

    const after = oneFile(randomBytes(1024), 'after.bin');
    const res = await h.app.inject({
      method: 'POST',
      url: '/v1/media',
      headers: { ...(await h.auth(user)), ...after.headers },
      payload: after.payload,
    });
    expect(res.statusCode).toBe(503);
    expect(res.json()).toEqual({ error: 'Service unavailable' });
    expect((await h.rows()).map((r) => r.filename)).toEqual(['before.png']);

    const read = await h.app.inject({ method: 'GET', url: new URL(stored.json().url).pathname });
    expect(read.statusCode).toBe(503);
    expect(read.headers['content-type']).toMatch(/^application\/json/);
    expect(read.json()).toEqual({ error: 'Service unavailable' });

    const ready = await h.app.inject({ method: 'GET', url: '/health/ready' });
    expect(ready.statusCode).toBe(503);
    expect(ready.json().checks.minio).toMatch(/^unavailable/);
  });
});

async function startMinio() {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'media-minio-'));
  const options: MinioOptions = {
    endPoint: '127.0.0.1',
    port,
    useSSL: false,
    accessKey: 'downtest',
    secretKey: randomBytes(12).toString('hex'),
  };
  const child = spawn(
    MINIO_BIN,
    ['server', dir, '--address', `127.0.0.1:${port}`, '--console-address', `127.0.0.1:${await freePort()}`, '--quiet'],
    {
      env: { PATH: process.env.PATH, HOME: process.env.HOME, MINIO_ROOT_USER: options.accessKey, MINIO_ROOT_PASSWORD: options.secretKey },
      stdio: 'ignore',
    },
  );
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`minio exited with ${child.exitCode}`);
    const ok = await fetch(`http://127.0.0.1:${port}/minio/health/ready`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return { process: child, dir, options };
    if (Date.now() > deadline) throw new Error('minio did not become ready');
    await new Promise((r) => setTimeout(r, 200));
  }
}

function stopMinio() {
  if (minio?.process.exitCode === null) minio.process.kill('SIGKILL');
}
