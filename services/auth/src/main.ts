import { STREAMS } from '@chat/contracts';
import { configOrExit, serve, startRuntime, startTokenVerifier } from '@chat/kit';
import { buildApp } from './app.ts';
import { startGuildsReadModel } from './bus/guilds.ts';
import { serveAuthRpc } from './bus/rpc.ts';
import { AuthConfig } from './config.ts';
import { loadSigningKeys } from './domain/keys.ts';
import { createSmtpMailer } from './domain/mailer.ts';
import { startPurger } from './domain/purge.ts';

const config = configOrExit(AuthConfig, 'auth');
const runtime = await startRuntime({
  service: 'auth',
  config,
  migrationsDir: new URL('../migrations', import.meta.url).pathname,
  stream: STREAMS.auth,
});
const keys = await loadSigningKeys(config, runtime.log);
serveAuthRpc(runtime.bus, runtime.log, runtime.pool, config);
// Auth signs the tokens, so it verifies them with its own key set rather than over HTTP.
const { tokens, revocations } = await startTokenVerifier({
  config,
  bus: runtime.bus,
  log: runtime.log,
  keys: keys.getKey,
});
const mailer = createSmtpMailer({ smtpUrl: config.SMTP_URL, from: config.MAIL_FROM });
const app = await buildApp({ ...runtime, config, tokens, keys, mailer });
const guilds = await startGuildsReadModel({ ...runtime, config });
const purger = startPurger({ ...runtime, config });
await serve({
  app,
  config,
  log: runtime.log,
  runtime,
  consumers: [...guilds, revocations],
  onClose: async () => {
    await purger.stop();
    mailer.close();
  },
});
