import { DmMessageEvent, MESSAGES_SUBJECTS, MessageEventData, SOCIAL_SUBJECTS, STREAMS } from '@chat/contracts';
import { type ConsumerHandle, consumeEvents } from '@chat/kit';
import type { z } from 'zod';
import type { MediaDeps } from '../deps.ts';
import { linksIn, resolveEmbeds } from '../domain/embeds.ts';

/**
 * Link previews for new channel and direct messages: posting never waits for them. Only created
 * messages are read (an update event is what the owner publishes after storing the embeds).
 */
export async function consumeMessagesForEmbeds(deps: MediaDeps): Promise<ConsumerHandle[]> {
  // Each consumer starts once the bus is there, creating its stream if its owner has not yet.
  const channel = await consumeEvents({
    ...deps,
    stream: STREAMS.guilds,
    spec: { stream: STREAMS.guilds.name, durable: 'media-embeds-channel', filter: MESSAGES_SUBJECTS.messageCreated },
    // The kit parsed each payload by its contract before asking.
    relevant: (event) => linksIn((event.data as z.output<typeof MessageEventData>).content).length > 0,
    handle: async (event, tx) => {
      const message = MessageEventData.safeParse(event.data);
      if (!message.success) return deps.log.warn({ eventId: event.id }, 'message event does not match its schema; skipped');
      const { id, channelId, content } = message.data;
      await resolveEmbeds(deps, tx, { kind: 'channel', channelId, messageId: id }, content);
    },
  });
  const dm = await consumeEvents({
    ...deps,
    stream: STREAMS.social,
    spec: { stream: STREAMS.social.name, durable: 'media-embeds-dm', filter: SOCIAL_SUBJECTS.dmCreated },
    relevant: (event) => linksIn((event.data as z.output<typeof DmMessageEvent>).message.content).length > 0,
    handle: async (event, tx) => {
      const parsed = DmMessageEvent.safeParse(event.data);
      if (!parsed.success) return deps.log.warn({ eventId: event.id }, 'DM event does not match its schema; skipped');
      const { id, conversationId, content } = parsed.data.message;
      await resolveEmbeds(deps, tx, { kind: 'dm', conversationId, messageId: id }, content);
    },
  });
  return [channel, dm];
}
