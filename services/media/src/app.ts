import { createHttpApp, registerHealth } from '@chat/kit';
import type { FastifyInstance } from 'fastify';
import type { MediaDeps } from './deps.ts';
import { fileRoutes } from './routes/files.ts';
import { linkPreviewRoutes } from './routes/link-preview.ts';
import { uploadRoutes } from './routes/upload.ts';

/**
 * Encoded file names reach several hundred characters (128 characters, up to 12 bytes each once
 * percent-encoded); the router's default of 100 would answer such a url 404.
 */
const MAX_PARAM_LENGTH = 2048;

/** The media service's HTTP app; tests build it and call inject() without a port. */
export async function buildApp(deps: MediaDeps): Promise<FastifyInstance> {
  const app = createHttpApp({
    log: deps.log,
    tokens: deps.tokens,
    pool: deps.pool,
    validateResponses: deps.config.NODE_ENV !== 'production',
    maxParamLength: MAX_PARAM_LENGTH,
  });
  registerHealth(app, { ...deps.checks, minio: () => deps.storage.ensureBucket() });
  await uploadRoutes(app, deps);
  await fileRoutes(app, deps);
  linkPreviewRoutes(app, deps);
  return app;
}
