import { STREAMS } from '@chat/contracts';
import { configOrExit, createTokenVerifier, serve, startRuntime } from '@chat/kit';
import { buildApp } from './app.ts';
import { startUserReadModel } from './bus/users.ts';
import { SocialConfig } from './config.ts';

const config = configOrExit(SocialConfig, 'social');
const runtime = await startRuntime({
  service: 'social',
  config,
  migrationsDir: new URL('../migrations', import.meta.url).pathname,
  stream: STREAMS.social,
});
const tokens = createTokenVerifier({
  keys: config.AUTH_JWKS_URL,
  issuer: config.JWT_ISSUER,
  audience: config.JWT_AUDIENCE,
  algorithm: config.JWT_ALGORITHM,
});
const users = await startUserReadModel(runtime);
const app = await buildApp({ ...runtime, config, tokens });
await serve({
  app,
  host: config.HOST,
  port: config.PORT,
  graceMs: config.SHUTDOWN_GRACE_MS,
  log: runtime.log,
  runtime,
  consumers: [users],
});
