import { EmbedsResolved, MEDIA_SUBJECTS, STREAMS } from '@chat/contracts';
import { type Bus, type ConsumerHandle, consumeEvents, type Logger, type Pool, type Queryable } from '@chat/kit';

/**
 * Link previews that media resolved after a message was posted (`media.embeds.resolved`), applied
 * once each by the service that owns the message: `store` writes them on the message and
 * publishes its update event, in the consumer's transaction.
 */
export function consumeResolvedEmbeds(
  options: { bus: Bus; pool: Pool; log: Logger },
  durable: string,
  store: (tx: Queryable, resolved: EmbedsResolved) => Promise<void>,
): Promise<ConsumerHandle> {
  return consumeEvents({
    ...options,
    // Media creates its stream too; whoever starts first creates it.
    stream: STREAMS.media,
    spec: { stream: STREAMS.media.name, durable, filter: MEDIA_SUBJECTS.embedsResolved },
    handle: async (event, tx) => store(tx, EmbedsResolved.parse(event.data)),
  });
}
