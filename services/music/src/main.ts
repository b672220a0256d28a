import { STREAMS } from '@chat/contracts';
import { configOrExit, serve, startRuntime, startTokenVerifier } from '@chat/kit';
import { buildApp } from './app.ts';
import { consumeEmptiedVoiceChannels, consumeGuildDeletions } from './bus/guilds.ts';
import { MusicConfig } from './config.ts';
import { startPlayerClock } from './domain/clock.ts';

const config = configOrExit(MusicConfig, 'music');
const runtime = await startRuntime({
  service: 'music',
  config,
  migrationsDir: new URL('../migrations', import.meta.url).pathname,
  stream: STREAMS.music,
});
const { tokens, revocations } = await startTokenVerifier({ config, bus: runtime.bus, log: runtime.log });
const deps = { ...runtime, config, tokens };
const app = await buildApp(deps);
// A deleted voice channel's (or server's) player goes, so that the clock stops running it.
const deletions = await consumeGuildDeletions(deps);
// A player whose voice channel nobody is connected to any more pauses, so that the clock stops running it.
const emptied = await consumeEmptiedVoiceChannels(deps);
// Tracks with a known length end by themselves; every replica runs the clock, each end is handled once.
const clock = startPlayerClock(deps);
await serve({ app, config, log: runtime.log, runtime, consumers: [...deletions, ...emptied, revocations], onClose: () => clock.stop() });
