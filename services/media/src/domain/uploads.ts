import { createHash, randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import { MAX_TRACK_SECONDS, MEDIA_SUBJECTS, type MediaFile } from '@chat/contracts';
import { enqueueEvent, type RequestContext, withTx } from '@chat/kit';
import { parseStream } from 'music-metadata';
import { insertMediaFile } from '../db/media-files.ts';
import { lockUploader } from '../db/quota.ts';
import type { MediaDeps } from '../deps.ts';
import { sniffContentType } from './content-type.ts';
import { sanitizeFilename } from './filename.ts';
import { toMediaFile } from './files.ts';
import { requireRoomFor } from './quota.ts';

type Deps = Pick<MediaDeps, 'pool' | 'storage' | 'config' | 'now'>;

/** A file as the client sent it: its declared name and its bytes (which end early on error). */
export interface IncomingFile {
  filename: string | undefined;
  bytes: AsyncIterable<Buffer>;
}

/** Bytes that are in the store but not yet recorded: record them or discard them. */
export interface StoredFile {
  id: string;
  storageKey: string;
  filename: string;
  contentType: string;
  size: number;
  sha256: string;
  durationSeconds: number | null;
}

/**
 * Streams a file into the store under a fresh id, hashing and counting on the way. The id comes
 * from a CSPRNG (UUID v4, 122 random bits) rather than the time-ordered v7 used elsewhere,
 * because it is the only secret of the public url. The key is the id, never the client's name.
 */
export async function storeFile(deps: Deps, file: IncomingFile): Promise<StoredFile> {
  const id = randomUUID();
  const digest = createHash('sha256');
  let size = 0;
  async function* measured() {
    for await (const chunk of file.bytes) {
      digest.update(chunk);
      size += chunk.length;
      yield chunk;
    }
  }
  const { contentType } = await deps.storage.put(id, measured(), sniffContentType);
  const stored = { id, storageKey: id, filename: sanitizeFilename(file.filename), contentType, size, sha256: digest.digest('hex') };
  return { ...stored, durationSeconds: await audioDurationSeconds(deps, stored) };
}

/**
 * What identifies a file without keeping it: its name as it would be recorded and the hash of its
 * bytes. A retried upload is read this far only, to tell it from another file under the same key.
 */
export async function measureFile(file: IncomingFile): Promise<{ filename: string; sha256: string }> {
  const digest = createHash('sha256');
  for await (const chunk of file.bytes) digest.update(chunk);
  return { filename: sanitizeFilename(file.filename), sha256: digest.digest('hex') };
}

/**
 * The length of an audio file from its own metadata (music-metadata reads the stored object back;
 * the upload itself streams and never holds the file). Null for other files, and for audio whose
 * length cannot be read: the player then waits for a skip, as for a track of unknown length.
 */
async function audioDurationSeconds(deps: Deps, file: { storageKey: string; contentType: string; size: number }): Promise<number | null> {
  if (!file.contentType.startsWith('audio/')) return null;
  let bytes: Readable | undefined;
  try {
    bytes = await deps.storage.read(file.storageKey);
    const { format } = await parseStream(bytes, { mimeType: file.contentType, size: file.size }, { duration: true, skipCovers: true });
    return plausibleLength(format.duration);
  } catch {
    return null;
  } finally {
    // Also when the parser gave up halfway (a malformed header): it leaves the stream open, and
    // with it the store's socket.
    bytes?.destroy();
  }
}

/**
 * A length read from a header is whatever the file claims: a DSF file with a negative sampling
 * frequency gives a negative one (which the table's CHECK refuses), a huge sample count one of
 * centuries. Only a finite length above zero and at most the longest track music takes from a
 * client (MAX_TRACK_SECONDS) is kept; anything else is unknown.
 */
export function plausibleLength(seconds: number | undefined): number | null {
  return seconds !== undefined && Number.isFinite(seconds) && seconds > 0 && seconds <= MAX_TRACK_SECONDS ? seconds : null;
}

/**
 * Records a stored file and its event in one transaction, if it fits in the uploader's quotas
 * (checked under their lock); if anything fails, the bytes go too.
 */
export async function recordFile(deps: Deps, ctx: RequestContext, stored: StoredFile): Promise<MediaFile> {
  try {
    return await withTx(deps.pool, async (tx) => {
      await lockUploader(tx, ctx.userId);
      await requireRoomFor(tx, deps, ctx.userId, stored.size);
      const row = await insertMediaFile(tx, { ...stored, uploaderId: ctx.userId, createdAt: deps.now() });
      const file = toMediaFile(row, deps.config.MEDIA_PUBLIC_URL);
      await enqueueEvent(tx, MEDIA_SUBJECTS.fileUploaded, file, ctx.requestId);
      return file;
    });
  } catch (err) {
    await discardFile(deps, stored);
    throw err;
  }
}

/** Removes the bytes of an upload that will not be recorded. */
export async function discardFile(deps: Deps, stored: StoredFile): Promise<void> {
  await deps.storage.remove(stored.storageKey);
}
