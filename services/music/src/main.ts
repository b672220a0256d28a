import { STREAMS } from '@chat/contracts';
import { configOrExit, serve, startRuntime, startTokenVerifier } from '@chat/kit';
import { buildApp } from './app.ts';
import { MusicConfig } from './config.ts';

const config = configOrExit(MusicConfig, 'music');
const runtime = await startRuntime({
  service: 'music',
  config,
  migrationsDir: new URL('../migrations', import.meta.url).pathname,
  stream: STREAMS.music,
});
const { tokens, revocations } = await startTokenVerifier({ config, bus: runtime.bus, log: runtime.log });
const app = await buildApp({ ...runtime, config, tokens });
await serve({ app, config, log: runtime.log, runtime, consumers: [revocations] });
