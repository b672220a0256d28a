import { STREAMS } from '@chat/contracts';
import { configOrExit, serve, startRuntime, tokenVerifierFor } from '@chat/kit';
import { buildApp } from './app.ts';
import { startGuildsReadModel } from './bus/guilds.ts';
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
const guilds = await startGuildsReadModel({ ...runtime, config });
await serve({
  app,
  config,
  log: runtime.log,
  runtime,
  consumers: guilds,
  onClose: async () => mailer.close(),
});
