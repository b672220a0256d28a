import { isDeepStrictEqual } from 'node:util';
import { EmbedsResolved, type LinkPreview, MEDIA_SUBJECTS, STREAMS } from '@chat/contracts';
import { type Bus, type ConsumerHandle, consumeEvents, type Logger, type Pool, type Queryable } from '@chat/kit';
import { withoutCode } from './code.ts';

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
 * The http(s) links of a message that media previews, in order, at most MAX_EMBEDS, each named by
 * the url its preview carries (previewUrlOf): spellings of one page (a fragment, a host written
 * another way) are one link. As on Discord, a link wrapped in `<...>` or written in code is not
 * embedded, and trailing punctuation that ends a sentence is not part of the link; a closing
 * parenthesis is, when the link opened it (`https://en.wikipedia.org/wiki/Foo_(bar)`).
 */
export function linksIn(content: string): string[] {
  const links: string[] = [];
  for (const match of withoutCode(content).matchAll(/(<)?(https?:\/\/[^\s<>]+)(>)?/gi)) {
    if (match[1] && match[3]) continue;
    const link = withoutTrailingPunctuation(match[2] ?? '');
    if (!URL.canParse(link)) continue;
    const url = previewUrlOf(link);
    if (!links.includes(url)) links.push(url);
    if (links.length === MAX_EMBEDS) break;
  }
  return links;
}

const TRAILING_PUNCTUATION = /[.,;:!?)\]'"]$/;

/** The link without the punctuation after it; a `)` stays when it closes a `(` of the link. */
function withoutTrailingPunctuation(link: string): string {
  let kept = link;
  while (TRAILING_PUNCTUATION.test(kept) && !(kept.endsWith(')') && count(kept, '(') >= count(kept, ')'))) kept = kept.slice(0, -1);
  return kept;
}

const count = (text: string, char: string) => text.split(char).length - 1;

/**
 * The previews a message with this content shows, one per link of the content, in the order of its
 * links, the first of `previews` that names a link winning (put the fresher ones first). A message
 * carries previews of its current text only: an edit keeps the previews of the links it keeps and
 * drops the others (media resolves the links it adds), and previews resolved for a text edited
 * meanwhile are stored only for the links it kept. A preview names its link as media's cache does:
 * parsed, without its fragment or an empty query.
 */
export function previewsOfLinksIn(content: string, previews: readonly LinkPreview[]): LinkPreview[] {
  return linksIn(content).flatMap((url) => previews.find((p) => p.url === url) ?? []);
}

/**
 * The previews a message shows once previews media resolved for it are applied: the resolved ones
 * and those it shows already, for the links its current text has (previewsOfLinksIn), so previews
 * resolved for the post and for an edit, arriving in either order, add up. Undefined when that
 * changes nothing: the owner then stores and announces nothing, and media, which reads the owner's
 * update events, is not asked again.
 */
export function embedsWithResolved(
  content: string,
  shown: readonly LinkPreview[],
  resolved: readonly LinkPreview[],
): LinkPreview[] | undefined {
  const embeds = previewsOfLinksIn(content, [...resolved, ...shown]);
  return isDeepStrictEqual(embeds, shown) ? undefined : embeds;
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
