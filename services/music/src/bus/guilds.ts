import { GUILDS_SUBJECTS, Id, STREAMS, VOICE_SUBJECTS } from '@chat/contracts';
import { type Bus, type ConsumerHandle, consumeEvents, type DurableConsumerSpec, type Logger, type Pool } from '@chat/kit';
import { z } from 'zod';
import { removeChannelPlayer, removeServerPlayers } from '../domain/deletions.ts';
import { type EmptiedChannel, pauseEmptiedChannel } from '../domain/empty-channels.ts';
import type { PlayerDeps } from '../domain/player.ts';

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

/**
 * Voice states' ends that guilds says left their channel with nobody connected. Durable, so an end
 * published while music is down still pauses the player once it is back; but a new durable starts at
 * the next event, not the stream's first: an emptiness said before it existed may be long over (people
 * came back and play), and pausing them now would be wrong.
 */
export const VOICE_LEFT: DurableConsumerSpec = {
  stream: STREAMS.guilds.name,
  durable: 'music-voice-left',
  filter: VOICE_SUBJECTS.left,
  deliverNewOnly: true,
};
export const VOICE_MOVED: DurableConsumerSpec = {
  stream: STREAMS.guilds.name,
  durable: 'music-voice-moved',
  filter: VOICE_SUBJECTS.moved,
  deliverNewOnly: true,
};

// Absent on events of a guilds that did not say it: unknown, so nothing is paused.
const LeftVoice = z.object({ userId: Id, channelId: Id, channelEmptied: z.boolean().optional() });
const MovedInVoice = z.object({ userId: Id, fromChannelId: Id, fromChannelEmptied: z.boolean().optional() });

const leftEmptied = ({ userId, channelId, channelEmptied }: z.output<typeof LeftVoice>) =>
  channelEmptied ? { channelId, userId } : undefined;
const moveEmptied = ({ userId, fromChannelId, fromChannelEmptied }: z.output<typeof MovedInVoice>) =>
  fromChannelEmptied ? { channelId: fromChannelId, userId } : undefined;

/**
 * Pauses the player of a voice channel its last listener left (guilds.voice.left, or
 * guilds.voice.moved out of it), each event once (the kit's inbox); events that emptied nothing are
 * acked without a transaction.
 */
export async function consumeEmptiedVoiceChannels(
  deps: { bus: Bus; pool: Pool; log: Logger } & Pick<PlayerDeps, 'now'>,
): Promise<ConsumerHandle[]> {
  const follow = <S extends z.ZodType>(
    spec: DurableConsumerSpec,
    subject: string,
    schema: S,
    emptied: (data: z.output<S>) => EmptiedChannel | undefined,
  ) =>
    consumeEvents({
      bus: deps.bus,
      pool: deps.pool,
      log: deps.log,
      stream: STREAMS.guilds,
      spec,
      schemas: { [subject]: schema },
      relevant: (event) => emptied(event.data as z.output<S>) !== undefined,
      handle: (event, tx) => pauseEmptiedChannel(deps, tx, emptied(event.data as z.output<S>)!),
    });
  return [
    await follow(VOICE_LEFT, VOICE_SUBJECTS.left, LeftVoice, leftEmptied),
    await follow(VOICE_MOVED, VOICE_SUBJECTS.moved, MovedInVoice, moveEmptied),
  ];
}
