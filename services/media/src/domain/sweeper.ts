import { type Logger, type Periodic, repeatEvery } from '@chat/kit';
import { deleteRecordCreatedBefore, hasRecordForKey, recordsByKey } from '../db/media-files.ts';
import type { StoredObject } from '../db/storage.ts';
import type { MediaDeps } from '../deps.ts';

type Deps = Pick<MediaDeps, 'pool' | 'storage' | 'log'>;

export interface SweepOptions {
  now: Date;
  /** Only what is older than this is touched: an upload in flight has an object before its record. */
  olderThanMs: number;
  /** Records read per query. */
  pageSize?: number;
}

export interface SweepResult {
  objectsRemoved: number;
  recordsRemoved: number;
  /** Multipart uploads begun before the cut-off and never finished: their bytes were never an object. */
  uploadsAborted: number;
}

/** The records in key order, a page at a time. */
async function* recordsInKeyOrder(deps: Deps, pageSize: number) {
  let after = '';
  for (;;) {
    const page = await recordsByKey(deps.pool, after, pageSize);
    yield* page;
    if (page.length < pageSize) return;
    after = page[page.length - 1]!.storageKey;
  }
}

/**
 * One pass over the bucket and the records, merged in key order (S3 lists keys in byte order, the
 * records are read in the same order), with memory bounded by one page of each:
 * - an object that no record names, last written before the cut-off, is removed: its upload
 *   died between storing and committing (the process was killed), so no url was handed out;
 * - a record whose object is gone, created before the cut-off, is removed: nothing can serve it;
 * - then a multipart upload begun before the cut-off and never finished is aborted (its parts hold
 *   bytes but are no object yet).
 * Every replica may sweep: both removals are idempotent.
 */
export async function sweepOrphans(deps: Deps, options: SweepOptions): Promise<SweepResult> {
  const cutoff = new Date(options.now.getTime() - options.olderThanMs);
  const objects: AsyncIterator<StoredObject> = deps.storage.list()[Symbol.asyncIterator]();
  const records = recordsInKeyOrder(deps, options.pageSize ?? 1_000);
  const result: SweepResult = { objectsRemoved: 0, recordsRemoved: 0, uploadsAborted: 0 };
  let object = await objects.next();
  let record = await records.next();
  while (!object.done || !record.done) {
    const objectKey = object.done ? undefined : object.value.key;
    const recordKey = record.done ? undefined : record.value.storageKey;
    if (recordKey !== undefined && (objectKey === undefined || recordKey < objectKey)) {
      const { id, createdAt } = record.value!;
      if (createdAt < cutoff && (await deleteRecordCreatedBefore(deps.pool, id, cutoff))) {
        deps.log.warn({ mediaId: id }, 'removed a media record whose object is gone');
        result.recordsRemoved++;
      }
      record = await records.next();
    } else if (objectKey !== undefined && (recordKey === undefined || objectKey < recordKey)) {
      // Asked once more: a record committed after the pass went by this key names the object.
      if (object.value!.lastModified < cutoff && !(await hasRecordForKey(deps.pool, objectKey))) {
        await deps.storage.remove(objectKey);
        deps.log.info({ key: objectKey }, 'removed an object without a record');
        result.objectsRemoved++;
      }
      object = await objects.next();
    } else {
      [object, record] = await Promise.all([objects.next(), records.next()]);
    }
  }
  result.uploadsAborted = await abortStaleUploads(deps, cutoff);
  return result;
}

/** A live upload aborts its own multipart upload on failure; one begun before the cut-off lost its process. */
async function abortStaleUploads(deps: Deps, cutoff: Date): Promise<number> {
  const stale = new Set<string>();
  try {
    for await (const upload of deps.storage.listUnfinished()) if (upload.initiated < cutoff) stale.add(upload.key);
  } catch (err) {
    // minio lists each upload's parts too, so an upload aborted meanwhile fails the listing: next sweep.
    deps.log.warn({ err }, 'could not list unfinished uploads; aborting those listed so far');
  }
  for (const key of stale) {
    await deps.storage.abortUnfinished(key);
    deps.log.info({ key }, 'aborted an unfinished upload');
  }
  return stale.size;
}

/** Sweeps every `intervalSeconds`; a tick that finds the previous sweep still running skips. */
export function startMediaSweeper(
  deps: Deps & Pick<MediaDeps, 'now'>,
  log: Logger,
  settings: { intervalSeconds: number; orphanAgeSeconds: number },
): Periodic {
  const sweep = async () => {
    const result = await sweepOrphans(deps, { now: deps.now(), olderThanMs: settings.orphanAgeSeconds * 1_000 });
    if (result.objectsRemoved || result.recordsRemoved || result.uploadsAborted) log.info(result, 'media sweep removed orphans');
  };
  return repeatEvery(settings.intervalSeconds * 1_000, sweep, log, 'media sweep');
}
