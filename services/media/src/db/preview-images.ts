import { exec, many, type Queryable } from '@chat/kit';

/**
 * A stored preview image with these bytes, marked as just taken (so that a purge running now
 * leaves it alone); undefined when there is none. One that messages show is preferred.
 */
export async function reusePreviewImage(db: Queryable, sha256: string, now: Date): Promise<{ id: string; filename: string } | undefined> {
  const [row] = await many<{ id: string; filename: string }>(
    db,
    `WITH reused AS (
       UPDATE preview_images SET used_at = $2
       WHERE media_id = (SELECT media_id FROM preview_images WHERE sha256 = $1 ORDER BY embedded DESC LIMIT 1)
       RETURNING media_id)
     SELECT f.id, f.filename FROM reused JOIN media_files f ON f.id = reused.media_id`,
    [sha256, now],
  );
  return row;
}

/** `chargedTo`: the user whose quota the image counts against. */
export async function insertPreviewImage(
  db: Queryable,
  image: { mediaId: string; sha256: string; usedAt: Date; chargedTo: string },
): Promise<void> {
  await exec(db, 'INSERT INTO preview_images (media_id, sha256, used_at, charged_to) VALUES ($1, $2, $3, $4)', [
    image.mediaId,
    image.sha256,
    image.usedAt,
    image.chargedTo,
  ]);
}

/**
 * Marks preview images as shown by a message, for good; answers those that still exist (one
 * purged a moment ago must not be named by the message). The row lock taken here makes a purge
 * that runs at the same time wait and see the mark.
 */
export async function markPreviewImagesEmbedded(db: Queryable, mediaIds: string[]): Promise<Set<string>> {
  if (mediaIds.length === 0) return new Set();
  const rows = await many<{ id: string }>(
    db,
    'UPDATE preview_images SET embedded = true WHERE media_id = ANY($1::uuid[]) RETURNING media_id AS id',
    [mediaIds],
  );
  return new Set(rows.map((r) => r.id));
}

/**
 * Removes the records of preview images that no message shows, no cached preview names, and no
 * preview took since `takenBefore`; answers their storage keys, for the objects to go too.
 */
export async function deleteUnusedPreviewImages(db: Queryable, takenBefore: Date): Promise<string[]> {
  // The preview_images rows first: a message marking one at this moment holds its row, and the
  // delete then sees the mark and skips it.
  const rows = await many<{ storageKey: string }>(
    db,
    `WITH unused AS (
       DELETE FROM preview_images p
       WHERE NOT p.embedded AND p.used_at < $1 AND NOT EXISTS (SELECT 1 FROM link_previews l WHERE l.image_id = p.media_id)
       RETURNING p.media_id)
     DELETE FROM media_files f USING unused WHERE f.id = unused.media_id RETURNING f.storage_key AS "storageKey"`,
    [takenBefore],
  );
  return rows.map((r) => r.storageKey);
}
