import type { Client } from 'minio';
import type { Backing } from './backing.ts';

/** The MINIO_URL of a service for these MinIO settings. */
export function minioUrl(m: Backing['minio']): string {
  return `${m.useSSL ? 'https' : 'http'}://${encodeURIComponent(m.accessKey)}:${encodeURIComponent(m.secretKey)}@${m.endPoint}:${m.port}`;
}

/** Everything a listing stream yields. */
export async function collect<T>(stream: AsyncIterable<unknown>): Promise<T[]> {
  const items: T[] = [];
  for await (const item of stream as AsyncIterable<T>) items.push(item);
  return items;
}

/**
 * Keys with a multipart upload under way. minio lists the parts of each upload it lists, so an
 * upload aborted between the two calls fails the listing: list again.
 */
export async function incompleteUploads(s3: Client, bucket: string): Promise<string[]> {
  for (let attempt = 1; ; attempt++) {
    try {
      return (await collect<{ key: string }>(s3.listIncompleteUploads(bucket, '', true))).map((i) => i.key);
    } catch (err) {
      if ((err as { code?: string }).code !== 'NoSuchUpload' || attempt === 5) throw err;
    }
  }
}

/** Removes a bucket of tests or benches with everything in it, unfinished uploads included. */
export async function removeBucket(s3: Client, bucket: string): Promise<void> {
  const keys = (await collect<{ name?: string }>(s3.listObjectsV2(bucket, '', true))).map((i) => i.name as string);
  for (const key of await incompleteUploads(s3, bucket)) await s3.removeIncompleteUpload(bucket, key);
  if (keys.length) await s3.removeObjects(bucket, keys);
  await s3.removeBucket(bucket);
}
