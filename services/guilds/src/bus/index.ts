import type { ConsumerHandle, MediaRooms } from '@chat/kit';
import type { GuildsDeps } from '../deps.ts';
import { consumeActivityEvents } from './activities.ts';
import { consumeEmbeds } from './embeds.ts';
import { consumeMentions } from './mentions.ts';
import { serveAudienceRpc, serveGuildsRpc } from './rpc.ts';
import { consumeUserEvents } from './users.ts';
import { consumeVoiceAccess } from './voice-access.ts';
import { consumeVoiceMedia } from './voice-media.ts';

/** Everything guilds does on the bus besides publishing: its RPC answers and its consumers. */
export async function startBus(deps: Pick<GuildsDeps, 'bus' | 'pool' | 'log'> & { rooms: MediaRooms }): Promise<ConsumerHandle[]> {
  serveGuildsRpc(deps.bus, deps.log, { pool: deps.pool, bus: deps.bus });
  serveAudienceRpc(deps.bus, deps.log, deps);
  return [
    await consumeUserEvents(deps),
    await consumeActivityEvents(deps),
    await consumeEmbeds(deps),
    await consumeMentions(deps),
    await consumeVoiceMedia(deps),
    ...(await consumeVoiceAccess(deps)),
  ];
}
