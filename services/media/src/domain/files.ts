import type { Readable } from 'node:stream';
import type { MediaFile, MediaFileReply } from '@chat/contracts';
import { notFound, type RequestContext } from '@chat/kit';
import { findMediaFile, type MediaFileRow } from '../db/media-files.ts';
import type { MediaDeps } from '../deps.ts';

type Deps = Pick<MediaDeps, 'pool' | 'storage' | 'config'>;

/** The public url of a file: `{MEDIA_PUBLIC_URL}/v1/media/{id}/{filename}`. */
export function fileUrl(publicUrl: string, id: string, filename: string): string {
  return `${publicUrl}/v1/media/${id}/${encodeURIComponent(filename)}`;
}

export function toMediaFile(row: MediaFileRow, publicUrl: string): MediaFile {
  const { storageKey: _key, ...fields } = row;
  return { ...fields, url: fileUrl(publicUrl, row.id, row.filename) };
}

/** The record of an upload, for its uploader only: anyone else is told it does not exist. */
export async function getOwnFile(deps: Deps, ctx: RequestContext, id: string): Promise<MediaFile> {
  const row = await findMediaFile(deps.pool, id);
  if (!row || row.uploaderId !== ctx.userId) throw notFound('File');
  return toMediaFile(row, deps.config.MEDIA_PUBLIC_URL);
}

/** What another service needs to check an attachment (rpc.media.file.get). */
export async function describeFile(deps: Deps, id: string): Promise<MediaFileReply> {
  const row = await findMediaFile(deps.pool, id);
  if (!row) throw notFound('File');
  const { id: fileId, uploaderId, filename, contentType, size, durationSeconds } = row;
  return {
    id: fileId,
    uploaderId,
    filename,
    contentType,
    size,
    durationSeconds,
    url: fileUrl(deps.config.MEDIA_PUBLIC_URL, fileId, filename),
  };
}

/**
 * The record behind a public url. The name must match too: the url is what was handed out, and
 * a file is not reachable under any other name.
 */
export async function findServedFile(deps: Deps, id: string, filename: string): Promise<MediaFileRow> {
  const row = await findMediaFile(deps.pool, id);
  if (!row || row.filename !== filename) throw notFound('File');
  return row;
}

/** The bytes of a file, or of an inclusive byte range of it. */
export function readFile(deps: Deps, row: MediaFileRow, range?: { start: number; end: number }): Promise<Readable> {
  return deps.storage.read(row.storageKey, range);
}
