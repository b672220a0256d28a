import { STREAMS } from '@chat/contracts';
import { configOrExit, mediaRooms, serve, startRuntime, startTokenVerifier } from '@chat/kit';
import { buildApp } from './app.ts';
import { startBus } from './bus/index.ts';
import { GuildsConfig } from './config.ts';
import { startVoiceRoomCheck, startVoiceSweeper } from './domain/voice-sweeper.ts';

const config = configOrExit(GuildsConfig, 'guilds');
const runtime = await startRuntime({
  service: 'guilds',
  config,
  migrationsDir: new URL('../migrations', import.meta.url).pathname,
  stream: STREAMS.guilds,
});
const { tokens, revocations } = await startTokenVerifier({ config, bus: runtime.bus, log: runtime.log });
const app = await buildApp({ ...runtime, config, tokens });
// One client of LiveKit's room API for the voice consumer and the room check.
const rooms = mediaRooms(config);
const consumers = await startBus({ ...runtime, rooms });
const voiceSweeper = startVoiceSweeper(runtime, runtime.log, config.VOICE_STATE_TTL_SECONDS);
const voiceRoomCheck = startVoiceRoomCheck(runtime, rooms, runtime.log);
await serve({
  app,
  config,
  log: runtime.log,
  runtime,
  consumers: [...consumers, revocations],
  onClose: async () => {
    await Promise.all([voiceSweeper.stop(), voiceRoomCheck.stop()]);
  },
});
