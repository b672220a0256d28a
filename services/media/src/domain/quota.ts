import { type AppError, type Queryable, tooManyRequests } from '@chat/kit';
import { dayFreesAt, hourFreesAt, usageOf } from '../db/quota.ts';
import type { MediaDeps } from '../deps.ts';

/**
 * Per-uploader quotas (issue 16): files per rolling hour and bytes per rolling day, counted from
 * the committed records (a user's uploads, and the preview images kept for them). Checked before the body is read (a full quota costs no bandwidth), capped
 * while it streams (see routes/upload.ts), and checked again under the uploader's lock when the
 * record is written, so parallel uploads cannot overrun it together.
 */
type Deps = Pick<MediaDeps, 'config' | 'now'>;

const HOUR_SECONDS = 3_600;
const DAY_SECONDS = 86_400;

/** The 429 of an upload that does not fit, naming the quota, with the seconds until it would fit. */
function exceeded(quota: string, now: Date, freesAt: Date | undefined, fallbackSeconds: number): AppError {
  const seconds = freesAt ? (freesAt.getTime() - now.getTime()) / 1_000 : fallbackSeconds;
  return tooManyRequests(seconds, `Upload quota exceeded: at most ${quota}`);
}

/** Whether one more file of `size` bytes fits both quotas of `uploaderId` now (a preview's image). */
export async function fitsQuota(db: Queryable, deps: Deps, uploaderId: string, size: number): Promise<boolean> {
  const usage = await usageOf(db, uploaderId, deps.now());
  return usage.filesInHour < deps.config.MEDIA_QUOTA_FILES_PER_HOUR && usage.bytesInDay + size <= deps.config.MEDIA_QUOTA_BYTES_PER_DAY;
}

/**
 * Throws the 429 when one more file of `size` bytes would pass either quota of `uploaderId` now;
 * otherwise answers how many bytes the day still has room for.
 */
export async function requireRoomFor(db: Queryable, deps: Deps, uploaderId: string, size: number): Promise<number> {
  const now = deps.now();
  const files = deps.config.MEDIA_QUOTA_FILES_PER_HOUR;
  const bytes = deps.config.MEDIA_QUOTA_BYTES_PER_DAY;
  const usage = await usageOf(db, uploaderId, now);
  if (usage.filesInHour >= files) {
    throw exceeded(`${files} files per hour`, now, await hourFreesAt(db, uploaderId, now, files), HOUR_SECONDS);
  }
  if (usage.bytesInDay + size > bytes) {
    throw exceeded(`${bytes} bytes per day`, now, await dayFreesAt(db, uploaderId, now, bytes, size), DAY_SECONDS);
  }
  return bytes - usage.bytesInDay;
}

/** A file that turned out larger than the room left in the uploader's day (its size is known). */
export class DoesNotFitQuota extends Error {
  constructor(readonly size: number) {
    super(`The file of ${size} bytes does not fit in the upload quota`);
  }
}
