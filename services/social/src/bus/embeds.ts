import type { Bus, ConsumerHandle, Logger, Pool } from '@chat/kit';
import { consumeResolvedEmbeds } from '@chat/messaging';
import { storeDirectEmbeds } from '../domain/embeds.ts';

/** Link previews of direct messages, resolved by media after sending. */
export function consumeEmbeds(options: { bus: Bus; pool: Pool; log: Logger }): Promise<ConsumerHandle> {
  return consumeResolvedEmbeds(options, 'social-embeds', storeDirectEmbeds);
}
