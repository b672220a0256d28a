import type { Queryable } from '@chat/kit';
import { exec, many, maybeOne, one } from '@chat/kit';

/** A row of media_files in the record's field names (the url is added by the domain). */
export interface MediaFileRow {
  id: string;
  uploaderId: string;
  storageKey: string;
  filename: string;
  contentType: string;
  size: number;
  sha256: string;
  /** Audio only: the length read from the file. */
  durationSeconds: number | null;
  createdAt: string;
}

const COLUMNS = `id, uploader_id AS "uploaderId", storage_key AS "storageKey", filename, content_type AS "contentType",
  size, sha256, duration_seconds AS "durationSeconds", created_at AS "createdAt"`;

/** `createdAt` comes from the service's clock, the one its quotas and sweeper count with. */
export async function insertMediaFile(db: Queryable, file: Omit<MediaFileRow, 'createdAt'> & { createdAt: Date }): Promise<MediaFileRow> {
  return one<MediaFileRow & Record<string, unknown>>(
    db,
    `INSERT INTO media_files (id, uploader_id, storage_key, filename, content_type, size, sha256, created_at, duration_seconds)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING ${COLUMNS}`,
    [
      file.id,
      file.uploaderId,
      file.storageKey,
      file.filename,
      file.contentType,
      file.size,
      file.sha256,
      file.createdAt,
      file.durationSeconds,
    ],
  );
}

export async function findMediaFile(db: Queryable, id: string): Promise<MediaFileRow | undefined> {
  return maybeOne<MediaFileRow & Record<string, unknown>>(db, `SELECT ${COLUMNS} FROM media_files WHERE id = $1`, [id]);
}

/** The next records in the byte order of their keys (the order S3 lists objects in), after `afterKey`. */
export async function recordsByKey(
  db: Queryable,
  afterKey: string,
  limit: number,
): Promise<{ id: string; storageKey: string; createdAt: Date }[]> {
  const rows = await many<{ id: string; storageKey: string; createdAt: string }>(
    db,
    `SELECT id, storage_key AS "storageKey", created_at AS "createdAt" FROM media_files
     WHERE storage_key COLLATE "C" > $1 ORDER BY storage_key COLLATE "C" LIMIT $2`,
    [afterKey, limit],
  );
  return rows.map((r) => ({ ...r, createdAt: new Date(r.createdAt) }));
}

export async function hasRecordForKey(db: Queryable, storageKey: string): Promise<boolean> {
  return (await maybeOne(db, 'SELECT 1 FROM media_files WHERE storage_key = $1', [storageKey])) !== undefined;
}

/** Removes a record created before `before` (a younger one may belong to an upload that just committed). */
export async function deleteRecordCreatedBefore(db: Queryable, id: string, before: Date): Promise<boolean> {
  return (await exec(db, 'DELETE FROM media_files WHERE id = $1 AND created_at < $2', [id, before])) === 1;
}
