import { STREAMS } from '@chat/contracts';
import { configOrExit, serve, startRuntime, tokenVerifierFor } from '@chat/kit';
import { buildApp } from './app.ts';
import { serveMediaRpc } from './bus/rpc.ts';
import { MediaConfig } from './config.ts';
import { createObjectStore } from './db/storage.ts';

const config = configOrExit(MediaConfig, 'media');
const runtime = await startRuntime({
  service: 'media',
  config,
  migrationsDir: new URL('../migrations', import.meta.url).pathname,
  stream: STREAMS.media,
});
const tokens = tokenVerifierFor(config);
const storage = createObjectStore({ minio: config.MINIO_URL, bucket: config.MEDIA_BUCKET, log: runtime.log });
// MinIO down at boot is not fatal: readiness reports it, and its check creates the bucket later.
await storage.ensureBucket().catch((err) => runtime.log.error({ err }, 'could not create the media bucket; readiness will retry'));
const deps = { ...runtime, config, tokens, storage };
const app = await buildApp(deps);
serveMediaRpc(deps);
await serve({ app, config, log: runtime.log, runtime });
