import { STREAMS } from '@chat/contracts';
import { configOrExit, serve, startRuntime, tokenVerifierFor } from '@chat/kit';
import { buildApp } from './app.ts';
import { MusicConfig } from './config.ts';
import { startPlayerClock } from './domain/clock.ts';

const config = configOrExit(MusicConfig, 'music');
const runtime = await startRuntime({
  service: 'music',
  config,
  migrationsDir: new URL('../migrations', import.meta.url).pathname,
  stream: STREAMS.music,
});
const tokens = tokenVerifierFor(config);
const deps = { ...runtime, config, tokens };
const app = await buildApp(deps);
// Tracks with a known length end by themselves; every replica runs the clock, each end is handled once.
const clock = startPlayerClock(deps);
await serve({ app, config, log: runtime.log, runtime, onClose: () => clock.stop() });
