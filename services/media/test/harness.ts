import { createHash, randomBytes } from 'node:crypto';
import { STREAMS } from '@chat/contracts';
import { createPool, loadConfig } from '@chat/kit';
import { type Backing, collect, createTestIssuer, createTestRuntime, incompleteUploads, minioUrl, removeBucket } from '@chat/testkit';
import { Client } from 'minio';
import { inject } from 'vitest';
import { buildApp } from '../src/app.ts';
import { serveMediaRpc } from '../src/bus/rpc.ts';
import { MediaConfig } from '../src/config.ts';
import { createObjectStore, type ObjectStore } from '../src/db/storage.ts';
import type { MediaDeps } from '../src/deps.ts';
import { addressPolicy } from '../src/domain/address-policy.ts';
import { linkFetcher } from '../src/domain/link-fetcher.ts';
import { createSafeFetch, type SafeFetch, systemConnector } from '../src/domain/safe-fetch.ts';

export type MinioOptions = Backing['minio'];

/**
 * The media app as main wires it, on this test file's own database, bus namespace and bucket,
 * with a direct MinIO client to check what the store holds.
 */
export async function createMediaHarness(
  options: {
    minio?: MinioOptions;
    env?: Record<string, string>;
    createBucket?: boolean;
    now?: () => Date;
    fetchLink?: SafeFetch;
    /** The app's own pool of this many connections (DATABASE_POOL_SIZE), instead of the runtime's ten. */
    poolSize?: number;
    /** Wraps the object store the app uses, to watch or stall its calls. */
    storage?: (store: ObjectStore) => ObjectStore;
  } = {},
) {
  const backing = inject('backing');
  const minio = options.minio ?? backing.minio;
  const runtime = await createTestRuntime({
    service: 'media',
    migrationsDir: new URL('../migrations', import.meta.url).pathname,
    stream: STREAMS.media,
    backing,
  });
  const bucket = `t-media-${randomBytes(5).toString('hex')}`;
  const config = loadConfig(MediaConfig, {
    ...runtime.env,
    MINIO_URL: minioUrl(minio),
    MEDIA_BUCKET: bucket,
    MEDIA_PUBLIC_URL: 'https://chat.example.test',
    ...options.env,
  });
  const issuer = await createTestIssuer();
  const tokens = issuer.verifier();
  const store = createObjectStore({ minio: config.MINIO_URL, bucket, log: runtime.log });
  const storage = options.storage ? options.storage(store) : store;
  if (options.createBucket !== false) await storage.ensureBucket();
  const pool = options.poolSize === undefined ? runtime.pool : createPool(runtime.databaseUrl, options.poolSize);
  const deps: MediaDeps = {
    ...runtime,
    pool,
    config,
    tokens,
    storage,
    now: options.now ?? (() => new Date()),
    fetchLink: options.fetchLink ?? linkFetcher(config),
  };
  const app = await buildApp(deps);
  serveMediaRpc(deps);
  const s3 = new Client(minio);

  return {
    app,
    deps,
    runtime,
    config,
    issuer,
    s3,
    bucket,
    auth: async (userId: string) => ({ authorization: `Bearer ${await issuer.sign(userId)}` }),
    objectKeys: () => collect<{ name?: string }>(s3.listObjectsV2(bucket, '', true)).then((items) => items.map((i) => i.name)),
    incompleteUploads: () => incompleteUploads(s3, bucket),
    objectBytes: async (key: string) => Buffer.concat(await collect<Buffer>(await s3.getObject(bucket, key))),
    rows: async () =>
      (
        await runtime.pool.query(
          'SELECT id, uploader_id, storage_key, filename, content_type, size, sha256 FROM media_files ORDER BY created_at',
        )
      ).rows,
    async close() {
      await app.close();
      if (pool !== runtime.pool) await pool.end();
      await removeBucket(s3, bucket).catch(() => {});
      await runtime.close();
    },
  };
}

export type MediaHarness = Awaited<ReturnType<typeof createMediaHarness>>;

export interface Part {
  name: string;
  /** A file part when set (the raw Content-Disposition parameter is `disposition` if given). */
  filename?: string;
  /** The whole Content-Disposition parameter list after `form-data; name="..."`, verbatim. */
  disposition?: string;
  contentType?: string;
  data: Buffer | string;
}

/** A multipart/form-data body written byte for byte, so tests can send what browsers would not. */
export function multipart(parts: Part[]): { payload: Buffer; headers: Record<string, string> } {
  const boundary = `----test${randomBytes(8).toString('hex')}`;
  const chunks: Buffer[] = [];
  for (const part of parts) {
    const params = part.disposition ?? (part.filename !== undefined ? `; filename="${part.filename}"` : '');
    const head = [`--${boundary}`, `Content-Disposition: form-data; name="${part.name}"${params}`];
    if (part.contentType) head.push(`Content-Type: ${part.contentType}`);
    chunks.push(Buffer.from(`${head.join('\r\n')}\r\n\r\n`), Buffer.from(part.data), Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { payload: Buffer.concat(chunks), headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } };
}

/** One file part named `file`. */
export function oneFile(data: Buffer | string, filename = 'file.bin', contentType = 'application/octet-stream') {
  return multipart([{ name: 'file', filename, contentType, data }]);
}

export const PNG_1X1 = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
);

export const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');

/** The link fetcher of the preview tests: only this machine's page servers, every name resolving to 127.0.0.1. */
export function localPageFetch(): SafeFetch {
  return createSafeFetch({
    policy: addressPolicy(['127.0.0.1']),
    timeoutMs: 5_000,
    maxRedirects: 5,
    userAgent: 'test',
    resolve: async () => ['127.0.0.1'],
    connect: systemConnector,
  });
}
