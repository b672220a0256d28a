import type { Queryable } from '@chat/kit';
import { maybeOne, one } from '@chat/kit';

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

export async function insertMediaFile(db: Queryable, file: Omit<MediaFileRow, 'createdAt'>): Promise<MediaFileRow> {
  return one<MediaFileRow & Record<string, unknown>>(
    db,
    `INSERT INTO media_files (id, uploader_id, storage_key, filename, content_type, size, sha256, duration_seconds)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING ${COLUMNS}`,
    [file.id, file.uploaderId, file.storageKey, file.filename, file.contentType, file.size, file.sha256, file.durationSeconds],
  );
}

export async function findMediaFile(db: Queryable, id: string): Promise<MediaFileRow | undefined> {
  return maybeOne<MediaFileRow & Record<string, unknown>>(db, `SELECT ${COLUMNS} FROM media_files WHERE id = $1`, [id]);
}
