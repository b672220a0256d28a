import { STREAMS } from '@chat/contracts';
import { configOrExit, createTokenVerifier, serve, startRuntime } from '@chat/kit';
import { buildApp } from './app.ts';
import { AuthConfig } from './config.ts';
import { loadSigningKeys } from './domain/keys.ts';
import { createSmtpMailer } from './domain/mailer.ts';

const config = configOrExit(AuthConfig, 'auth');
const runtime = await startRuntime({
  service: 'auth',
  config,
  migrationsDir: new URL('../migrations', import.meta.url).pathname,
  stream: STREAMS.auth,
});
const keys = await loadSigningKeys(config, runtime.log);
// Auth signs the tokens, so it verifies them with its own key set rather than over HTTP.
const tokens = createTokenVerifier({
  keys: keys.getKey,
  issuer: config.JWT_ISSUER,
  audience: config.JWT_AUDIENCE,
  algorithm: config.JWT_ALGORITHM,
});
const mailer = createSmtpMailer({ smtpUrl: config.SMTP_URL, from: config.MAIL_FROM });
const app = await buildApp({ ...runtime, config, tokens, keys, mailer });
await serve({
  app,
  host: config.HOST,
  port: config.PORT,
  graceMs: config.SHUTDOWN_GRACE_MS,
  log: runtime.log,
  runtime,
  onClose: async () => mailer.close(),
});
