import { DirectMessage, MESSAGES_SUBJECTS, MessageEventData, SOCIAL_SUBJECTS, STREAMS } from '@chat/contracts';
import { type ConsumerHandle, consumeEvents } from '@chat/kit';
import { linksIn } from '@chat/messaging';
import { z } from 'zod';
import type { MediaDeps } from '../deps.ts';
import { resolveEmbeds } from '../domain/embeds.ts';

/**
 * What the previews read of each message (tolerant readers): the kit parses only these fields of
 * every message posted, rather than the whole record, most of which the previews never use.
 */
const ChannelMessageText = MessageEventData.pick({ id: true, channelId: true, content: true });
const DirectMessageText = z.object({ message: DirectMessage.pick({ id: true, conversationId: true, content: true }) });

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
    schemas: { [MESSAGES_SUBJECTS.messageCreated]: ChannelMessageText },
    // The kit parsed each payload by the reader above before asking.
    relevant: (event) => linksIn((event.data as z.output<typeof ChannelMessageText>).content).length > 0,
    handle: async (event, tx) => {
      const { id, channelId, content } = event.data as z.output<typeof ChannelMessageText>;
      await resolveEmbeds(deps, tx, { kind: 'channel', channelId, messageId: id }, content);
    },
  });
  const dm = await consumeEvents({
    ...deps,
    stream: STREAMS.social,
    spec: { stream: STREAMS.social.name, durable: 'media-embeds-dm', filter: SOCIAL_SUBJECTS.dmCreated },
    schemas: { [SOCIAL_SUBJECTS.dmCreated]: DirectMessageText },
    relevant: (event) => linksIn((event.data as z.output<typeof DirectMessageText>).message.content).length > 0,
    handle: async (event, tx) => {
      const { id, conversationId, content } = (event.data as z.output<typeof DirectMessageText>).message;
      await resolveEmbeds(deps, tx, { kind: 'dm', conversationId, messageId: id }, content);
    },
  });
  return [channel, dm];
}
