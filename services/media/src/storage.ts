import type { Readable } from 'node:stream';
import { AppError, type Logger, notFound } from '@chat/kit';
import { Client } from 'minio';
import type { MediaConfig } from './config.ts';

/**
 * S3 wants every part but the last to be at least 5 MiB. An upload holds two parts in memory
 * (one on the wire, one filling), so this figure bounds the memory of an upload.
 */
export const PART_SIZE = 5 * 1024 * 1024;

/** The object store of uploads: one bucket in MinIO (or any S3). */
export interface ObjectStore {
  readonly bucket: string;
  /** Creates the bucket when missing; also the readiness check (it fails while MinIO is down). */
  ensureBucket(): Promise<void>;
  /**
   * Streams `source` into `key`. `contentTypeOf` sees the first part (or the whole file when it is
   * smaller) before anything is written. Nothing is left behind when the source or the store
   * fails; the source's own error is rethrown as it is, a store failure becomes a 503.
   */
  put(key: string, source: AsyncIterable<Buffer>, contentTypeOf: (head: Buffer) => Promise<string>): Promise<{ contentType: string }>;
  /** The bytes of `key`, or of the inclusive byte range `range` of it. */
  read(key: string, range?: { start: number; end: number }): Promise<Readable>;
  /** Best effort: a failure is logged, never thrown (callers are already cleaning up). */
  remove(key: string): Promise<void>;
  /** Every object, in the byte order of the keys (S3's listing order); a failure of the store is a 503. */
  list(): AsyncIterable<StoredObject>;
  /** Multipart uploads begun and never completed nor aborted (their process died), with when they began. */
  listUnfinished(): AsyncIterable<{ key: string; initiated: Date }>;
  /** Aborts every unfinished multipart upload of `key`; best effort, as `remove`. */
  abortUnfinished(key: string): Promise<void>;
}

export interface StoredObject {
  key: string;
  lastModified: Date;
}

export function createObjectStore(options: { minio: MediaConfig['MINIO_URL']; bucket: string; log: Logger }): ObjectStore {
  const client = new Client(options.minio);
  const { bucket, log } = options;

  async function ensureBucket() {
    if (await call(() => client.bucketExists(bucket))) return;
    try {
      await client.makeBucket(bucket);
    } catch (err) {
      // Another replica created it between our check and our call.
      if ((err as { code?: string }).code !== 'BucketAlreadyOwnedByYou') throw unavailableStore(err);
    }
  }

  async function put(key: string, source: AsyncIterable<Buffer>, contentTypeOf: (head: Buffer) => Promise<string>) {
    const parts = partsOf(source, PART_SIZE);
    const first = await parts.next();
    const head = first.done ? Buffer.alloc(0) : first.value;
    const contentType = await contentTypeOf(head);
    const metadata = { 'Content-Type': contentType };
    const second = first.done ? first : await parts.next();
    if (second.done) {
      await call(() => client.putObject(bucket, key, head, head.length, metadata));
    } else {
      await putMultipart(key, metadata, prepend([head, second.value], parts));
    }
    return { contentType };
  }

  /**
   * minio's own putObject(stream) neither passes a source error on (the upload hangs) nor aborts
   * the multipart upload it started, so the parts are sent here with its multipart primitives.
   */
  async function putMultipart(key: string, metadata: Record<string, string>, parts: AsyncIterable<Buffer>) {
    const uploadId = await call(() => client.initiateNewMultipartUpload(bucket, key, metadata));
    try {
      const etags: { part: number; etag: string }[] = [];
      let partNumber = 0;
      let inFlight: Promise<{ part: number; etag: string }> | undefined;
      for await (const body of parts) {
        if (inFlight) etags.push(await inFlight);
        const part = ++partNumber;
        inFlight = call(() =>
          client.uploadPart({ bucketName: bucket, objectName: key, uploadID: uploadId, partNumber: part, headers: {} }, body),
        );
        // Awaited on the next turn; until then a failure must not count as unhandled.
        inFlight.catch(() => {});
      }
      if (inFlight) etags.push(await inFlight);
      await call(() => client.completeMultipartUpload(bucket, key, uploadId, etags));
    } catch (err) {
      await client.abortMultipartUpload(bucket, key, uploadId).catch((abortErr) => {
        log.warn({ err: abortErr, key }, 'could not abort a failed multipart upload');
      });
      throw err;
    }
  }

  async function read(key: string, range?: { start: number; end: number }) {
    try {
      return range
        ? await client.getPartialObject(bucket, key, range.start, range.end - range.start + 1)
        : await client.getObject(bucket, key);
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (code === 'NoSuchKey' || code === 'NotFound') throw notFound('File');
      throw unavailableStore(err);
    }
  }

  async function remove(key: string) {
    await client.removeObject(bucket, key).catch((err) => log.warn({ err, key }, 'could not remove an object'));
  }

  async function* list(): AsyncGenerator<StoredObject, void> {
    try {
      for await (const item of client.listObjectsV2(bucket, '', true) as AsyncIterable<{ name?: string; lastModified?: Date }>) {
        // Only prefixes come without a name or date, and a recursive listing has none.
        if (item.name && item.lastModified) yield { key: item.name, lastModified: item.lastModified };
      }
    } catch (err) {
      throw unavailableStore(err);
    }
  }

  async function* listUnfinished(): AsyncGenerator<{ key: string; initiated: Date }, void> {
    try {
      const uploads = client.listIncompleteUploads(bucket, '', true) as AsyncIterable<{ key?: string; initiated?: Date }>;
      for await (const upload of uploads) if (upload.key && upload.initiated) yield { key: upload.key, initiated: upload.initiated };
    } catch (err) {
      throw unavailableStore(err);
    }
  }

  async function abortUnfinished(key: string) {
    await client.removeIncompleteUpload(bucket, key).catch((err) => log.warn({ err, key }, 'could not abort an unfinished upload'));
  }

  return { bucket, ensureBucket, put, read, remove, list, listUnfinished, abortUnfinished };
}

function unavailableStore(cause: unknown): AppError {
  return new AppError(503, 'File storage unavailable', { cause });
}

/** Runs one call to the store; any failure of it is the store's, hence a 503. */
async function call<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw unavailableStore(err);
  }
}

/**
 * Regroups a byte stream into parts of exactly `size` bytes (the last one may be smaller), copied
 * into two buffers used in turn, so that an upload allocates no new memory per part and leaves
 * none for the garbage collector. A yielded part stays valid until the part after the next one
 * is asked for: a caller may keep one part on the wire while the next one fills, and no more.
 */
export async function* partsOf(source: AsyncIterable<Buffer>, size: number): AsyncGenerator<Buffer, void> {
  const buffers: Buffer[] = [];
  let turn = 0;
  let filled = 0;
  for await (const chunk of source) {
    for (let offset = 0; offset < chunk.length; ) {
      buffers[turn] ??= Buffer.allocUnsafe(size);
      const copied = chunk.copy(buffers[turn] as Buffer, filled, offset);
      offset += copied;
      filled += copied;
      if (filled === size) {
        yield buffers[turn] as Buffer;
        turn = 1 - turn;
        filled = 0;
      }
    }
  }
  if (filled > 0) yield (buffers[turn] as Buffer).subarray(0, filled);
}

async function* prepend(first: Buffer[], rest: AsyncIterator<Buffer, void>): AsyncGenerator<Buffer, void> {
  yield* first;
  for (let next = await rest.next(); !next.done; next = await rest.next()) yield next.value;
}
