import { GUILDS_SUBJECTS, Id, STREAMS } from '@chat/contracts';
import { type Bus, type ConsumerHandle, consumeEvents, type DurableConsumerSpec, type Logger, type Pool } from '@chat/kit';
import { z } from 'zod';
import { removeChannelPlayer, removeServerPlayers } from '../domain/deletions.ts';

/**
 * Durable, so that a deletion published while music is down is applied when it is back; each
 * event applies once (the kit records it in the handler's transaction). A new durable starts at
 * the stream's first kept event, so players of channels deleted before music followed deletions go too.
 */
export const CHANNEL_DELETIONS: DurableConsumerSpec = {
  stream: STREAMS.guilds.name,
  durable: 'music-channel-deletions',
  filter: GUILDS_SUBJECTS.channelDeleted,
};
export const SERVER_DELETIONS: DurableConsumerSpec = {
  stream: STREAMS.guilds.name,
  durable: 'music-server-deletions',
  filter: GUILDS_SUBJECTS.serverDeleted,
};

// What music reads of each event (tolerant readers): the ids, not the server's member list.
const DeletedChannel = z.object({ id: Id, serverId: Id });
const DeletedServer = z.object({ id: Id });

/** Removes the players of voice channels and servers that guilds deleted (one durable per subject: NATS takes one filter each). */
export async function consumeGuildDeletions(deps: { bus: Bus; pool: Pool; log: Logger }): Promise<ConsumerHandle[]> {
  // Created here too when guilds has not yet; the consumers start once the bus is there.
  const common = { bus: deps.bus, pool: deps.pool, log: deps.log, stream: STREAMS.guilds };
  return [
    await consumeEvents({
      ...common,
      spec: CHANNEL_DELETIONS,
      schemas: { [GUILDS_SUBJECTS.channelDeleted]: DeletedChannel },
      handle: (event, tx) => removeChannelPlayer(tx, event.data as z.output<typeof DeletedChannel>, deps.log),
    }),
    await consumeEvents({
      ...common,
      spec: SERVER_DELETIONS,
      schemas: { [GUILDS_SUBJECTS.serverDeleted]: DeletedServer },
      handle: (event, tx) => removeServerPlayers(tx, (event.data as z.output<typeof DeletedServer>).id, deps.log),
    }),
  ];
}
