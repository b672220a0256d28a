import { STREAMS } from '@chat/contracts';
import { configOrExit, mediaRooms, serve, startRuntime, startTokenVerifier } from '@chat/kit';
import { buildApp, callDeps } from './app.ts';
import { consumeCallMedia } from './bus/call-media.ts';
import { consumeDisconnections } from './bus/disconnections.ts';
import { consumeEmbeds } from './bus/embeds.ts';
import { startReadStateConsumers } from './bus/read-states.ts';
import { serveSocialRpc } from './bus/rpc.ts';
import { startUserReadModel } from './bus/users.ts';
import { SocialConfig } from './config.ts';
import { startCallClock, startCallRoomCheck } from './domain/calls.ts';
import { loadCatalogue } from './domain/game-catalogue.ts';

const config = configOrExit(SocialConfig, 'social');
const runtime = await startRuntime({
  service: 'social',
  config,
  migrationsDir: new URL('../migrations', import.meta.url).pathname,
  stream: STREAMS.social,
});
const { tokens, revocations } = await startTokenVerifier({ config, bus: runtime.bus, log: runtime.log });
const catalogue = await loadCatalogue(runtime.pool);
runtime.log.info({ games: catalogue.games, loaded: catalogue.loaded }, 'game catalogue ready');
const users = await startUserReadModel(runtime);
const embeds = await consumeEmbeds(runtime);
const readStates = await startReadStateConsumers(runtime);
const disconnections = await consumeDisconnections(runtime);
const rooms = mediaRooms(config);
const callMedia = await consumeCallMedia({ ...runtime, rooms });
serveSocialRpc(runtime.bus, runtime.log, runtime.pool);
const deps = { ...runtime, config, tokens };
const app = await buildApp(deps);
// Unanswered calls end as missed on time; every replica runs the clock, each call ends once.
const callClock = startCallClock(callDeps(deps), runtime.log);
const callRoomCheck = startCallRoomCheck(runtime.pool, rooms, runtime.log);
await serve({
  app,
  config,
  log: runtime.log,
  runtime,
  consumers: [users, embeds, ...readStates, disconnections, callMedia, revocations],
  onClose: async () => {
    await Promise.all([callClock.stop(), callRoomCheck.stop()]);
  },
});
