import { EmbedsResolved, type LinkPreview, MEDIA_SUBJECTS, STREAMS } from '@chat/contracts';
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

/** Discord embeds the first five links of a message; so do we. */
export const MAX_EMBEDS = 5;

/**
 * The http(s) links of a message, in order, without repeats: the ones media previews. As on
 * Discord, a link wrapped in `<...>` is not embedded; trailing punctuation that ends a sentence is
 * not part of the link.
 */
export function linksIn(content: string): string[] {
  const links: string[] = [];
  for (const match of content.matchAll(/(<)?(https?:\/\/[^\s<>]+)(>)?/gi)) {
    if (match[1] && match[3]) continue;
    const link = (match[2] ?? '').replace(/[.,;:!?)\]'"]+$/, '');
    if (URL.canParse(link) && !links.includes(link)) links.push(link);
    if (links.length === MAX_EMBEDS) break;
  }
  return links;
}

/**
 * Of these previews, those of links the content has: a message carries previews of its current
 * text only. An edit keeps the previews of the links it keeps and drops the others (new links get
 * none: media resolves posted messages only), and previews resolved for a text edited meanwhile
 * are stored only for the links it kept. A preview names its link as media's cache does: parsed,
 * without its fragment or an empty query.
 */
export function previewsOfLinksIn(content: string, previews: readonly LinkPreview[]): LinkPreview[] {
  const links = new Set(linksIn(content).map(previewUrlOf));
  return previews.filter((p) => links.has(p.url));
}

/**
 * The url a preview names its link by, as media's cache keys it: parsed (so host case, default ports
 * and IPv4 spellings are one), without its fragment or an empty query.
 */
export function previewUrlOf(link: string | URL): string {
  const url = new URL(link);
  url.hash = '';
  // An empty query (`/page?`) is the same page: setting it drops the lone "?".
  if (url.search === '') url.search = '';
  return url.href;
}
