import { MESSAGES_SUBJECTS, type MessageEventData, STREAMS } from '@chat/contracts';
import { type Bus, type ConsumerHandle, consumeEvents, type EventEnvelope, type Logger, type Pool } from '@chat/kit';
import type { z } from 'zod';
import { mayMention, onlineForHere, publishMentions } from '../domain/mention-fanout.ts';

export const MENTIONS_CONSUMER = { stream: STREAMS.guilds.name, durable: 'guilds-mentions', filter: MESSAGES_SUBJECTS.messageCreated };

/**
 * Guilds' own posted messages, after commit: each one's mentions resolved to the users who may view
 * the channel and published in batches (domain/mention-fanout.ts). Applied once per event (the
 * kit's inbox), acked after the commit that wrote the batches.
 */
export function consumeMentions(options: { bus: Bus; pool: Pool; log: Logger }): Promise<ConsumerHandle> {
  return consumeEvents({
    ...options,
    spec: MENTIONS_CONSUMER,
    relevant: (event) => mayMention(posted(event)),
    // The gateway is asked who is online outside the transaction: a slow answer holds no connection of the pool.
    prepare: (event) => onlineForHere(options, posted(event)),
    handle: async (event, tx, online) => {
      await publishMentions(tx, posted(event), online);
    },
  });
}

// The kit parsed the payload by its contract (EVENT_SCHEMAS) before handing the event on: no second parse.
const posted = (event: EventEnvelope) => event.data as z.output<typeof MessageEventData>;
