import type { LinkPreview } from '@chat/contracts';
import { exec, maybeOne, type Queryable } from '@chat/kit';

/** A cached outcome: the preview, or the public message of the failure. */
export type CachedPreview = { preview: LinkPreview; error: null } | { preview: null; error: string };

export async function findCachedPreview(db: Queryable, url: string, now: Date): Promise<CachedPreview | undefined> {
  return maybeOne<CachedPreview & Record<string, unknown>>(
    db,
    'SELECT preview, error FROM link_previews WHERE url = $1 AND expires_at > $2',
    [url, now],
  );
}

/** `imageId`: the stored preview image the preview shows, which stays while this row does. */
export async function cachePreview(
  db: Queryable,
  url: string,
  outcome: CachedPreview,
  imageId: string | null,
  expiresAt: Date,
): Promise<void> {
  await exec(
    db,
    `INSERT INTO link_previews (url, preview, error, image_id, expires_at) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (url) DO UPDATE SET preview = EXCLUDED.preview, error = EXCLUDED.error, image_id = EXCLUDED.image_id,
       expires_at = EXCLUDED.expires_at`,
    [url, outcome.preview, outcome.error, imageId, expiresAt],
  );
}

export async function deleteExpiredPreviews(db: Queryable, now: Date): Promise<number> {
  return exec(db, 'DELETE FROM link_previews WHERE expires_at <= $1', [now]);
}
