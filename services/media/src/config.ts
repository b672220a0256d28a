import { baseConfig, databaseConfig, env, tokenConfig } from '@chat/kit';
import ipaddr from 'ipaddr.js';
import { z } from 'zod';

const MIB = 1024 * 1024;

/** `http://KEY:SECRET@host:port` (https for TLS) parsed into the minio client's options. */
const MinioUrl = z.url({ protocol: /^https?$/, error: 'must be http(s)://KEY:SECRET@host:port' }).transform((value, ctx) => {
  const url = new URL(value);
  if (!url.username || !url.password) {
    ctx.addIssue({ code: 'custom', message: 'must carry the access key and secret as user:password' });
    return z.NEVER;
  }
  const useSSL = url.protocol === 'https:';
  return {
    endPoint: url.hostname,
    port: Number(url.port || (useSSL ? 443 : 80)),
    useSSL,
    accessKey: decodeURIComponent(url.username),
    secretKey: decodeURIComponent(url.password),
  };
});

export const MediaConfig = baseConfig
  .extend(databaseConfig.shape)
  .extend(tokenConfig.shape)
  .extend({
    PORT: env.port(3004),
    DATABASE_URL: databaseConfig.shape.DATABASE_URL.default('postgres://postgres@127.0.0.1:5432/media'),
    MINIO_URL: MinioUrl.prefault('http://minioadmin:minioadmin@127.0.0.1:9000'),
    /** Created at start-up when missing. */
    MEDIA_BUCKET: z
      .string()
      .regex(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, 'must be a valid S3 bucket name')
      .default('media'),
    /** The largest accepted file; one byte more answers 413. */
    MEDIA_MAX_UPLOAD_BYTES: env.int(25 * MIB).pipe(z.number().int().min(0)),
    /** Where clients reach GET /v1/media/{id}/{filename}: the gateway's public origin. */
    MEDIA_PUBLIC_URL: z
      .url()
      .default('http://127.0.0.1:8080')
      .transform((v) => v.replace(/\/+$/, '')),
    /**
     * Addresses or CIDR ranges that link previews may fetch from although they are not public.
     * Empty (off) by default; only for tests that serve pages from this machine.
     */
    LINK_PREVIEW_ALLOWLIST: env.list().pipe(z.array(z.string().refine(isAddressOrRange, 'must list IP addresses or CIDR ranges'))),
    /** The whole fetch of a page (redirects and its image included). */
    LINK_PREVIEW_TIMEOUT_MS: env.int(5_000).pipe(z.number().int().min(100).max(60_000)),
    /** Per uploader, over the last 24 hours; past it, 429. At least one file of the size limit. */
    MEDIA_QUOTA_BYTES_PER_DAY: env.int(1024 * MIB).pipe(z.number().int().min(1)),
    /** Per uploader, over the last hour; past it, 429. */
    MEDIA_QUOTA_FILES_PER_HOUR: env.int(100).pipe(z.number().int().min(1)),
    /** How often the sweeper looks for objects without a record and records without an object. */
    MEDIA_SWEEP_INTERVAL_SECONDS: env.int(600).pipe(z.number().int().min(1)),
    /** How old an orphan must be before the sweeper removes it (an upload in flight is younger). */
    MEDIA_ORPHAN_AGE_SECONDS: env.int(3600).pipe(z.number().int().min(60)),
  })
  .refine((c) => c.MEDIA_QUOTA_BYTES_PER_DAY >= c.MEDIA_MAX_UPLOAD_BYTES, {
    path: ['MEDIA_QUOTA_BYTES_PER_DAY'],
    error: 'must be at least MEDIA_MAX_UPLOAD_BYTES (one file of the size limit must fit in a day)',
  });

export type MediaConfig = z.output<typeof MediaConfig>;

function isAddressOrRange(value: string): boolean {
  return ipaddr.isValid(value) || ipaddr.isValidCIDR(value);
}
