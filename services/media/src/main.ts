import { STREAMS } from '@chat/contracts';
import { configOrExit, createTokenVerifier, serve, startRuntime } from '@chat/kit';
import { buildApp } from './app.ts';
import { MediaConfig } from './config.ts';

const config = configOrExit(MediaConfig, 'media');
const runtime = await startRuntime({
  service: 'media',
  config,
  migrationsDir: new URL('../migrations', import.meta.url).pathname,
  stream: STREAMS.media,
});
const tokens = createTokenVerifier({
  keys: config.AUTH_JWKS_URL,
  issuer: config.JWT_ISSUER,
  audience: config.JWT_AUDIENCE,
  algorithm: config.JWT_ALGORITHM,
});
const app = await buildApp({ ...runtime, config, tokens });
await serve({ app, host: config.HOST, port: config.PORT, graceMs: config.SHUTDOWN_GRACE_MS, log: runtime.log, runtime });
