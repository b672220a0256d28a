import { STREAMS } from '@chat/contracts';
import { configOrExit, serve, startRuntime, tokenVerifierFor } from '@chat/kit';
import { buildApp } from './app.ts';
import { serveAuthRpc } from './bus/rpc.ts';
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
const tokens = tokenVerifierFor(config, keys.getKey);
const mailer = createSmtpMailer({ smtpUrl: config.SMTP_URL, from: config.MAIL_FROM });
const app = await buildApp({ ...runtime, config, tokens, keys, mailer });
serveAuthRpc(runtime.bus, runtime.log, runtime.pool);
await serve({
  app,
  config,
  log: runtime.log,
  runtime,
  onClose: async () => mailer.close(),
});
