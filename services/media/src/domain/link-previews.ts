import { createHash, randomUUID } from 'node:crypto';
import type { LinkPreview } from '@chat/contracts';
import { AppError, type Logger, withTx } from '@chat/kit';
import { previewUrlOf } from '@chat/messaging';
import { decodeBuffer, getEncoding } from 'encoding-sniffer';
import { type CachedPreview, cachePreview, deleteExpiredPreviews, findCachedPreview } from '../db/link-previews.ts';
import { insertMediaFile } from '../db/media-files.ts';
import { deleteUnusedPreviewImages, insertPreviewImage, reusePreviewImage } from '../db/preview-images.ts';
import { lockUploader } from '../db/quota.ts';
import type { MediaDeps } from '../deps.ts';
import { sniffContentType } from './content-type.ts';
import { fileUrl } from './files.ts';
import { parsePageMeta } from './page-meta.ts';
import { fitsQuota } from './quota.ts';
import { parseFetchable } from './safe-fetch.ts';

export type PreviewDeps = Pick<MediaDeps, 'pool' | 'storage' | 'config' | 'fetchLink' | 'now'> & { log: Logger };

/** At most this much of a page (or an oEmbed answer) is read; the head comes first anyway. */
export const PAGE_MAX_BYTES = 1024 * 1024;
/** A preview image larger than this is left out rather than cut. */
export const IMAGE_MAX_BYTES = 5 * 1024 * 1024;
const PREVIEW_TTL_MS = 24 * 60 * 60 * 1000;
const FAILURE_TTL_MS = 5 * 60 * 1000;
/**
 * A preview image no cached preview names is removed only this long after a preview last took
 * it: a preview being built names its image before its cache row is written (its fetches take
 * seconds).
 */
export const UNUSED_IMAGE_GRACE_MS = 60 * 60 * 1000;
/** Stored preview images belong to the platform itself, not to a user (no user has this id). */
export const PLATFORM_UPLOADER = '00000000-0000-0000-0000-000000000000';

const HTML = /^(text\/html|application\/xhtml\+xml)$/;
/** Raster images only: an SVG is a document that can carry script. */
const PREVIEW_IMAGE = /^image\/(png|jpeg|gif|webp|avif)$/;

/** The cache key of a url: a fetchable one, named as messages name their previews (previewUrlOf). */
export function normaliseUrl(value: string): string {
  return previewUrlOf(parseFetchable(value));
}

/**
 * The preview of a link, from the cache when it is fresh. A failure the caller can be told about
 * (an address that is not allowed, a page that does not answer) is cached for a few minutes too.
 * An image kept for it counts against the upload quota of `chargeTo`, the user who asked or whose
 * message links it: past their quota the preview comes without it, cached a few minutes only (as a
 * failure), so that someone with room soon gets it whole.
 */
export async function previewLink(deps: PreviewDeps, value: string, chargeTo: string): Promise<LinkPreview> {
  const url = normaliseUrl(value);
  const now = deps.now();
  const cached = await findCachedPreview(deps.pool, url, now);
  if (cached?.error) throw new AppError(400, cached.error);
  if (cached?.preview) return cached.preview;
  let outcome: CachedPreview;
  let imageId: string | null = null;
  let whole = false;
  try {
    const built = await buildPreview(deps, url, chargeTo);
    outcome = { preview: built.preview, error: null };
    imageId = built.image === NO_ROOM ? null : (built.image?.id ?? null);
    whole = built.image !== NO_ROOM;
  } catch (err) {
    if (!(err instanceof AppError) || err.status !== 400) throw err;
    outcome = { preview: null, error: err.message };
  }
  const ttl = outcome.preview && whole ? PREVIEW_TTL_MS : FAILURE_TTL_MS;
  await cachePreview(deps.pool, url, outcome, imageId, new Date(now.getTime() + ttl));
  if (outcome.error !== null) throw new AppError(400, outcome.error);
  return outcome.preview;
}

/**
 * Removes cached outcomes that have expired, then the preview images that nothing needs any more:
 * no message shows them, no cached preview names them, and no preview took them lately. Answers
 * how many of each went.
 */
export async function purgeExpiredPreviews(
  deps: Pick<PreviewDeps, 'pool' | 'now' | 'storage'>,
): Promise<{ previews: number; images: number }> {
  const now = deps.now();
  const previews = await deleteExpiredPreviews(deps.pool, now);
  const keys = await deleteUnusedPreviewImages(deps.pool, new Date(now.getTime() - UNUSED_IMAGE_GRACE_MS));
  // Records first: an object whose removal fails has no record left, and the sweeper takes it.
  for (const key of keys) await deps.storage.remove(key);
  return { previews, images: keys.length };
}

/** A preview image kept here: its media file id and public url. */
interface KeptImage {
  id: string;
  url: string;
}

/** A preview image left out because it did not fit the upload quota of the user it is charged to. */
const NO_ROOM = 'no room';
type PreviewImage = KeptImage | null | typeof NO_ROOM;
const urlOf = (image: PreviewImage) => (image === null || image === NO_ROOM ? null : image.url);

async function buildPreview(deps: PreviewDeps, url: string, chargeTo: string): Promise<{ preview: LinkPreview; image: PreviewImage }> {
  const page = await deps.fetchLink(url, { accept: 'text/html,application/xhtml+xml;q=0.9,image/*;q=0.8', maxBytes: pageOrImageLimit });
  if (page.status >= 400) throw new AppError(400, `The link answered with status ${page.status}`);
  const mime = mimeOf(page.contentType);
  const empty: LinkPreview = { url, title: null, description: null, siteName: null, imageUrl: null, type: 'link' };
  if (mime.startsWith('image/')) {
    const image = page.truncated ? null : await keepImage(deps, page.body, chargeTo);
    return { preview: { ...empty, type: 'image', imageUrl: urlOf(image) }, image };
  }
  if (!HTML.test(mime)) return { preview: empty, image: null };
  const meta = parsePageMeta(decode(page.body, page.contentType), page.url);
  const oembed = meta.oembedUrl ? await fetchOembed(deps, meta.oembedUrl) : {};
  const imageLink = meta.image ?? oembed.thumbnail_url;
  const image = imageLink ? await copyImage(deps, imageLink, chargeTo) : null;
  const preview = {
    url,
    title: pageText(meta.title ?? oembed.title),
    description: pageText(meta.description),
    siteName: pageText(meta.siteName ?? oembed.provider_name),
    imageUrl: urlOf(image),
    type: pageText(meta.type ?? oembed.type) ?? 'website',
  };
  return { preview, image };
}

/**
 * Text another site wrote, made storable: every field of a preview that comes from a page or its
 * oEmbed answer passes here. PostgreSQL refuses U+0000 in text and jsonb (22P05) and an unpaired
 * surrogate in jsonb (an oEmbed `"\ud800"`, or a field cut to its length between the two halves of
 * an emoji); both become U+FFFD, as a browser shows a NUL in a title.
 */
function pageText(value: string | undefined): string | null {
  return value === undefined ? null : value.replace(UNSTORABLE, '\uFFFD');
}

/** U+0000, and a surrogate without its other half (in `u` mode a pair is one code point, so \p{Cs} matches only a lone one). */
const UNSTORABLE = /[\0\p{Cs}]/gu;

interface Oembed {
  title?: string;
  provider_name?: string;
  thumbnail_url?: string;
  type?: string;
}

/** The page's oEmbed answer, fetched as safely as the page; a broken one only means fewer fields. */
async function fetchOembed(deps: PreviewDeps, url: string): Promise<Oembed> {
  try {
    const res = await deps.fetchLink(url, { accept: 'application/json', maxBytes: PAGE_MAX_BYTES });
    if (res.status !== 200 || res.truncated) return {};
    const body = JSON.parse(res.body.toString('utf8')) as Record<string, unknown>;
    const text = (key: string) => (typeof body[key] === 'string' ? (body[key] as string).slice(0, 1024) : undefined);
    return { title: text('title'), provider_name: text('provider_name'), thumbnail_url: text('thumbnail_url'), type: text('type') };
  } catch (err) {
    deps.log.debug({ err, url }, 'oEmbed not used');
    return {};
  }
}

/** The page's image fetched through the same safe fetcher and kept here; null when it is not a usable image. */
async function copyImage(deps: PreviewDeps, url: string, chargeTo: string): Promise<PreviewImage> {
  try {
    const res = await deps.fetchLink(url, { accept: 'image/*', maxBytes: IMAGE_MAX_BYTES });
    if (res.status !== 200 || res.truncated) return null;
    return await keepImage(deps, res.body, chargeTo);
  } catch (err) {
    // A store (or database) that is down fails the preview, to be tried again: cached without its
    // image, the preview would show none for a day.
    if (err instanceof AppError && err.status === 503) throw err;
    deps.log.debug({ err, url }, 'preview image not kept');
    return null;
  }
}

/**
 * Keeps image bytes as a platform-owned media file, once per content: bytes already kept give the
 * file that holds them. The type comes from the bytes, never the other site. A new one counts
 * against the upload quota of `chargeTo`, checked before it is stored and again under their lock as
 * it is recorded, as an upload is: past it, NO_ROOM.
 */
async function keepImage(deps: PreviewDeps, bytes: Buffer, chargeTo: string): Promise<PreviewImage> {
  const contentType = await sniffContentType(bytes);
  if (!PREVIEW_IMAGE.test(contentType)) return null;
  const sha256 = createHash('sha256').update(bytes).digest('hex');
  const kept = await reusePreviewImage(deps.pool, sha256, deps.now());
  if (kept) return { id: kept.id, url: fileUrl(deps.config.MEDIA_PUBLIC_URL, kept.id, kept.filename) };
  if (!(await fitsQuota(deps.pool, deps, chargeTo, bytes.length))) return NO_ROOM;
  const id = randomUUID();
  const filename = `preview.${contentType.slice('image/'.length).replace('jpeg', 'jpg')}`;
  await deps.storage.put(id, single(bytes), async () => contentType);
  let recorded: boolean;
  try {
    recorded = await withTx(deps.pool, async (tx) => {
      await lockUploader(tx, chargeTo);
      if (!(await fitsQuota(tx, deps, chargeTo, bytes.length))) return false;
      const createdAt = deps.now();
      const file = { id, uploaderId: PLATFORM_UPLOADER, storageKey: id, filename, contentType, size: bytes.length, sha256 };
      await insertMediaFile(tx, { ...file, durationSeconds: null, createdAt });
      await insertPreviewImage(tx, { mediaId: id, sha256, usedAt: createdAt, chargedTo: chargeTo });
      return true;
    });
  } catch (err) {
    await deps.storage.remove(id);
    throw err;
  }
  if (!recorded) {
    await deps.storage.remove(id);
    return NO_ROOM;
  }
  return { id, url: fileUrl(deps.config.MEDIA_PUBLIC_URL, id, filename) };
}

async function* single(bytes: Buffer): AsyncGenerator<Buffer, void> {
  yield bytes;
}

/** A direct image link is read up to the limit of a preview image; a page up to its own. */
function pageOrImageLimit(contentType: string): number {
  return mimeOf(contentType).startsWith('image/') ? IMAGE_MAX_BYTES : PAGE_MAX_BYTES;
}

function mimeOf(contentType: string): string {
  return (contentType.split(';')[0] ?? '').trim().toLowerCase();
}

/**
 * The page's text, decoded as a browser decodes it (encoding-sniffer, the WHATWG sniffing
 * algorithm): a byte order mark, then the charset of Content-Type, then a `<meta charset>` or
 * `<meta http-equiv=content-type>` in the first 1024 bytes; UTF-8 when none names an encoding
 * it knows (browsers guess windows-1252 there, but an undeclared page today is mostly UTF-8).
 * A label of the Encoding standard's "replacement" encoding (iso-2022-kr, hz-gb-2312, ...: encodings
 * that let a page hide markup from a filter) has no TextDecoder: as that decoder does, the page is one
 * U+FFFD, which names nothing.
 */
function decode(body: Buffer, contentType: string): string {
  const charset = /;\s*charset=["']?([^"';\s]+)/i.exec(contentType)?.[1];
  const options = { transportLayerEncodingLabel: charset, defaultEncoding: 'utf-8' };
  if (getEncoding(body, options) === 'replacement') return body.length > 0 ? '\uFFFD' : '';
  return decodeBuffer(body, options);
}
