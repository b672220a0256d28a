import { STREAMS } from '@chat/contracts';
import { configOrExit, repeatEvery, serve, startRuntime, startTokenVerifier } from '@chat/kit';
import { buildApp } from './app.ts';
import { consumeMessagesForEmbeds } from './bus/embeds.ts';
import { serveMediaRpc } from './bus/rpc.ts';
import { MediaConfig } from './config.ts';
import { createObjectStore } from './db/storage.ts';
import { linkFetcher } from './domain/link-fetcher.ts';
import { purgeExpiredPreviews } from './domain/link-previews.ts';
import { startMediaSweeper } from './domain/sweeper.ts';

const config = configOrExit(MediaConfig, 'media');
const runtime = await startRuntime({
  service: 'media',
  config,
  migrationsDir: new URL('../migrations', import.meta.url).pathname,
  stream: STREAMS.media,
});
const { tokens, revocations } = await startTokenVerifier({ config, bus: runtime.bus, log: runtime.log });
const storage = createObjectStore({ minio: config.MINIO_URL, bucket: config.MEDIA_BUCKET, log: runtime.log });
// MinIO down at boot is not fatal: readiness reports it, and its check creates the bucket later.
await storage.ensureBucket().catch((err) => runtime.log.error({ err }, 'could not create the media bucket; readiness will retry'));
if (config.LINK_PREVIEW_ALLOWLIST.length > 0) {
  runtime.log.warn({ allowlist: config.LINK_PREVIEW_ALLOWLIST }, 'link previews may fetch from these non-public addresses');
}
const deps = { ...runtime, config, tokens, storage, now: () => new Date(), fetchLink: linkFetcher(config) };
const app = await buildApp(deps);
serveMediaRpc(deps);
const consumers = await consumeMessagesForEmbeds(deps);
const sweeper = startMediaSweeper(deps, runtime.log, {
  intervalSeconds: config.MEDIA_SWEEP_INTERVAL_SECONDS,
  orphanAgeSeconds: config.MEDIA_ORPHAN_AGE_SECONDS,
});
// Expired cached previews are dead weight, and so are the images only they showed; an hourly sweep
// keeps the table to about a day of links and the bucket to the images messages show.
const purge = repeatEvery(
  60 * 60 * 1000,
  async () => {
    const purged = await purgeExpiredPreviews(deps);
    if (purged.images > 0) runtime.log.info(purged, 'purged expired link previews and their images');
  },
  runtime.log,
  'link preview purge',
);
await serve({
  app,
  config,
  log: runtime.log,
  runtime,
  consumers: [...consumers, revocations],
  onClose: async () => {
    await Promise.all([purge.stop(), sweeper.stop()]);
  },
});
