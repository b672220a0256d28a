import type { Bus, ConsumerHandle, Logger, Pool } from '@chat/kit';
import { consumeResolvedEmbeds } from '@chat/messaging';
import { storeChannelEmbeds } from '../domain/embeds.ts';

/** Link previews of channel messages, resolved by media after posting. */
export function consumeEmbeds(options: { bus: Bus; pool: Pool; log: Logger }): Promise<ConsumerHandle> {
  return consumeResolvedEmbeds(options, 'guilds-embeds', storeChannelEmbeds);
}
