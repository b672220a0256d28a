import { baseConfig, databaseConfig, env, tokenConfig } from '@chat/kit';
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
  });

export type MediaConfig = z.output<typeof MediaConfig>;
