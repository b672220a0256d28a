import { DirectMessage, type EmbedsResolved, MESSAGES_SUBJECTS, MessageEventData, SOCIAL_SUBJECTS, STREAMS } from '@chat/contracts';
import { type ConsumerHandle, consumeEvents, type EventEnvelope, type StreamSpec } from '@chat/kit';
import { z } from 'zod';
import type { MediaDeps } from '../deps.ts';
import { linksToPreview, type MessageLinks, previewLinksOf, publishEmbeds } from '../domain/embeds.ts';

/**
 * What the previews read of each message (tolerant readers): the kit parses only these fields of
 * every message posted or edited, rather than the whole record, most of which the previews never
 * use; of its embeds, only the links they preview.
 */
const ShownEmbeds = z.array(z.object({ url: z.string() })).default([]);
const ChannelMessageText = MessageEventData.pick({ id: true, channelId: true, authorId: true, content: true }).extend({
  embeds: ShownEmbeds,
});
const DirectMessageText = z.object({
  message: DirectMessage.pick({ id: true, conversationId: true, senderId: true, content: true }).extend({ embeds: ShownEmbeds }),
});

/**
 * Messages whose previews are built at once, per consumer. They are independent, so a message
 * linking a slow site (up to three fetches of LINK_PREVIEW_TIMEOUT_MS) holds back only itself, in
 * one of these slots; no transaction is open while its sites answer.
 */
const MESSAGES_AT_ONCE = 8;

/** One kind of message event read for previews: where it comes from, and the message it carries. */
interface MessageEvents {
  stream: StreamSpec;
  durable: string;
  subject: string;
  schema: z.ZodType;
  /** Only events published from now on: an edit made before the consumer existed is not resolved again. */
  deliverNewOnly?: boolean;
  // The kit parsed each payload by `schema` before handing it over.
  /** The message's links, where its embeds go, and whose upload quota its preview images count against. */
  message: (event: EventEnvelope) => MessageLinks & { target: EmbedsResolved['target']; authorId: string };
}

const channelMessage = (event: EventEnvelope) => {
  const { id, channelId, authorId, content, embeds } = event.data as z.output<typeof ChannelMessageText>;
  return { content, embeds, authorId, target: { kind: 'channel' as const, channelId, messageId: id } };
};
const directMessage = (event: EventEnvelope) => {
  const { id, conversationId, senderId, content, embeds } = (event.data as z.output<typeof DirectMessageText>).message;
  return { content, embeds, authorId: senderId, target: { kind: 'dm' as const, conversationId, messageId: id } };
};

/**
 * Posted and edited messages, channel and direct: an edit's update event carries the previews the
 * message keeps, so only the links it added are previewed. The owner publishes the same update
 * event after storing previews; that one has no link left to preview (or only links that give
 * none, which publish nothing), so the round ends there.
 */
const EVENTS: MessageEvents[] = [
  {
    stream: STREAMS.guilds,
    durable: 'media-embeds-channel',
    subject: MESSAGES_SUBJECTS.messageCreated,
    schema: ChannelMessageText,
    message: channelMessage,
  },
  {
    stream: STREAMS.guilds,
    durable: 'media-embeds-channel-edits',
    subject: MESSAGES_SUBJECTS.messageUpdated,
    schema: ChannelMessageText,
    deliverNewOnly: true,
    message: channelMessage,
  },
  {
    stream: STREAMS.social,
    durable: 'media-embeds-dm',
    subject: SOCIAL_SUBJECTS.dmCreated,
    schema: DirectMessageText,
    message: directMessage,
  },
  {
    stream: STREAMS.social,
    durable: 'media-embeds-dm-edits',
    subject: SOCIAL_SUBJECTS.dmUpdated,
    schema: DirectMessageText,
    deliverNewOnly: true,
    message: directMessage,
  },
];

/** Link previews for posted and edited channel and direct messages: posting and editing never wait for them. */
export async function consumeMessagesForEmbeds(deps: MediaDeps): Promise<ConsumerHandle[]> {
  const consumers: ConsumerHandle[] = [];
  // One after the other: two consumers of one stream would both create it.
  for (const events of EVENTS) consumers.push(await consumeForEmbeds(deps, events));
  return consumers;
}

function consumeForEmbeds(deps: MediaDeps, events: MessageEvents): Promise<ConsumerHandle> {
  // Each consumer starts once the bus is there, creating its stream if its owner has not yet.
  return consumeEvents({
    ...deps,
    stream: events.stream,
    spec: { stream: events.stream.name, durable: events.durable, filter: events.subject, deliverNewOnly: events.deliverNewOnly ?? false },
    schemas: { [events.subject]: events.schema },
    concurrency: MESSAGES_AT_ONCE,
    relevant: (event) => linksToPreview(events.message(event)).length > 0,
    prepare: (event) => {
      const message = events.message(event);
      return previewLinksOf(deps, linksToPreview(message), message.authorId);
    },
    handle: (event, tx, previews) => publishEmbeds(tx, events.message(event).target, previews),
  });
}
