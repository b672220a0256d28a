import { STREAMS } from '@chat/contracts';
import { configOrExit, serve, startRuntime, tokenVerifierFor } from '@chat/kit';
import { buildApp } from './app.ts';
import { serveSocialRpc } from './bus/rpc.ts';
import { startUserReadModel } from './bus/users.ts';
import { SocialConfig } from './config.ts';

const config = configOrExit(SocialConfig, 'social');
const runtime = await startRuntime({
  service: 'social',
  config,
  migrationsDir: new URL('../migrations', import.meta.url).pathname,
  stream: STREAMS.social,
});
const tokens = tokenVerifierFor(config);
const users = await startUserReadModel(runtime);
serveSocialRpc(runtime.bus, runtime.log, runtime.pool);
const app = await buildApp({ ...runtime, config, tokens });
await serve({
  app,
  config,
  log: runtime.log,
  runtime,
  consumers: [users],
});
