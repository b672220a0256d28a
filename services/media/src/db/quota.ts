import { exec, maybeOne, one, type Queryable } from '@chat/kit';

/**
 * The files `$1` is charged for: those they uploaded, and the preview images kept for their
 * requests and messages (still kept: a purged one frees its room).
 */
const CHARGED = `(
  SELECT id, size, created_at FROM media_files WHERE uploader_id = $1
  UNION ALL
  SELECT f.id, f.size, f.created_at FROM preview_images p JOIN media_files f ON f.id = p.media_id WHERE p.charged_to = $1
) c`;

/** What one uploader has recorded in the quota windows that end at `now`. */
export interface Usage {
  filesInHour: number;
  bytesInDay: number;
}

export async function usageOf(db: Queryable, uploaderId: string, now: Date): Promise<Usage> {
  const row = await one<{ files: number; bytes: string }>(
    db,
    `SELECT count(*) FILTER (WHERE created_at > $2::timestamptz - interval '1 hour')::int AS files,
            COALESCE(sum(size), 0)::text AS bytes
     FROM ${CHARGED} WHERE created_at > $2::timestamptz - interval '1 day' AND created_at <= $2`,
    [uploaderId, now],
  );
  return { filesInHour: row.files, bytesInDay: Number(row.bytes) };
}

/**
 * When the hour's count drops to `limit - 1`: the moment the file `count - limit + 1` places from
 * the oldest in the window leaves it.
 */
export async function hourFreesAt(db: Queryable, uploaderId: string, now: Date, limit: number): Promise<Date | undefined> {
  const row = await maybeOne<{ at: string }>(
    db,
    `SELECT created_at + interval '1 hour' AS at FROM ${CHARGED}
     WHERE created_at > $2::timestamptz - interval '1 hour' AND created_at <= $2
     ORDER BY created_at DESC, id DESC OFFSET $3 - 1 LIMIT 1`,
    [uploaderId, now, limit],
  );
  return row ? new Date(row.at) : undefined;
}

/** When `size` more bytes fit in the day: once enough of the window's oldest files have left it. */
export async function dayFreesAt(db: Queryable, uploaderId: string, now: Date, quota: number, size: number): Promise<Date | undefined> {
  const row = await maybeOne<{ at: string }>(
    db,
    `SELECT at FROM (
       SELECT created_at + interval '1 day' AS at,
              sum(size) OVER (ORDER BY created_at, id) AS freed,
              sum(size) OVER () AS used
       FROM ${CHARGED} WHERE created_at > $2::timestamptz - interval '1 day' AND created_at <= $2
     ) w WHERE used - freed + $4 <= $3 ORDER BY at LIMIT 1`,
    [uploaderId, now, quota, size],
  );
  return row ? new Date(row.at) : undefined;
}

/** Serialises the quota check and the record of one uploader's uploads, so parallel ones count exactly. */
export async function lockUploader(tx: Queryable, uploaderId: string): Promise<void> {
  await exec(tx, "SELECT pg_advisory_xact_lock(hashtextextended('media-quota:' || $1, 0))", [uploaderId]);
}
