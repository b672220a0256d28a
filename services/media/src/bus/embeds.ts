import { DirectMessage, MESSAGES_SUBJECTS, MessageEventData, SOCIAL_SUBJECTS, STREAMS } from '@chat/contracts';
import { type ConsumerHandle, consumeEvents, type EventEnvelope } from '@chat/kit';
import { linksIn } from '@chat/messaging';
import { z } from 'zod';
import type { MediaDeps } from '../deps.ts';
import { previewLinksOf, publishEmbeds } from '../domain/embeds.ts';

/**
 * What the previews read of each message (tolerant readers): the kit parses only these fields of
 * every message posted, rather than the whole record, most of which the previews never use.
 */
const ChannelMessageText = MessageEventData.pick({ id: true, channelId: true, content: true });
const DirectMessageText = z.object({ message: DirectMessage.pick({ id: true, conversationId: true, content: true }) });

/**
 * Messages whose previews are built at once, per consumer. They are independent, so a message
 * linking a slow site (up to three fetches of LINK_PREVIEW_TIMEOUT_MS) holds back only itself, in
 * one of these slots; no transaction is open while its sites answer.
 */
const MESSAGES_AT_ONCE = 8;

// The kit parsed each payload by the readers above before handing it over.
const channelText = (event: EventEnvelope) => event.data as z.output<typeof ChannelMessageText>;
const directText = (event: EventEnvelope) => (event.data as z.output<typeof DirectMessageText>).message;

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
    concurrency: MESSAGES_AT_ONCE,
    relevant: (event) => linksIn(channelText(event).content).length > 0,
    prepare: (event) => previewLinksOf(deps, channelText(event).content),
    handle: async (event, tx, previews) => {
      const { id, channelId } = channelText(event);
      await publishEmbeds(tx, { kind: 'channel', channelId, messageId: id }, previews);
    },
  });
  const dm = await consumeEvents({
    ...deps,
    stream: STREAMS.social,
    spec: { stream: STREAMS.social.name, durable: 'media-embeds-dm', filter: SOCIAL_SUBJECTS.dmCreated },
    schemas: { [SOCIAL_SUBJECTS.dmCreated]: DirectMessageText },
    concurrency: MESSAGES_AT_ONCE,
    relevant: (event) => linksIn(directText(event).content).length > 0,
    prepare: (event) => previewLinksOf(deps, directText(event).content),
    handle: async (event, tx, previews) => {
      const { id, conversationId } = directText(event);
      await publishEmbeds(tx, { kind: 'dm', conversationId, messageId: id }, previews);
    },
  });
  return [channel, dm];
}
