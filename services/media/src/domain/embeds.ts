import { type EmbedsResolved, type LinkPreview, MEDIA_SUBJECTS, mediaIdFromUrl } from '@chat/contracts';
import { AppError, enqueueEvent, type Queryable } from '@chat/kit';
import { linksIn } from '@chat/messaging';
import { markPreviewImagesEmbedded } from '../db/preview-images.ts';
import { type PreviewDeps, previewLink } from './link-previews.ts';

/** What media reads of a posted or edited message: its text and the previews it shows (by url). */
export interface MessageLinks {
  content: string;
  embeds: readonly { url: string }[];
}

/**
 * The links of a message's text that show no preview yet: all of them when it was just posted, the
 * ones an edit added (or whose preview could not be made before) when it was edited. Empty for the
 * update its owner publishes after storing previews, unless a link gave none: so storing previews
 * never starts another round that changes anything.
 */
export function linksToPreview(message: MessageLinks): string[] {
  const shown = new Set(message.embeds.map((embed) => embed.url));
  return linksIn(message.content).filter((url) => !shown.has(url));
}

/**
 * The previews of these links that show something. Called before any transaction opens: the
 * fetches take seconds, and only the cache is read and written meanwhile, a statement at a time.
 * Each link stands alone: one that cannot be previewed is left out, and the others are still
 * answered. A preview with nothing to show (a text or JSON document, a page that names nothing, an
 * image too large to keep) is left out too, as Discord shows none.
 */
export async function previewLinksOf(deps: PreviewDeps, links: readonly string[], chargeTo: string): Promise<LinkPreview[]> {
  const outcomes = await Promise.allSettled(links.map((link) => previewLink(deps, link, chargeTo)));
  const previews = outcomes.flatMap((outcome, i) =>
    outcome.status === 'fulfilled' ? [outcome.value] : leftOut(deps, links[i], outcome.reason),
  );
  return previews.filter(showsSomething);
}

const showsSomething = (preview: LinkPreview): boolean =>
  [preview.title, preview.description, preview.siteName, preview.imageUrl].some((field) => field !== null && field.trim() !== '');

/**
 * Queues `media.embeds.resolved` for the service that owns the message, when any link gave a
 * preview (`previewLinksOf`), in the transaction that records the message's event as applied.
 */
export async function publishEmbeds(tx: Queryable, target: EmbedsResolved['target'], previews: LinkPreview[]): Promise<void> {
  if (previews.length === 0) return;
  const payload: EmbedsResolved = { target, embeds: await keepShownImages(tx, previews) };
  await enqueueEvent(tx, MEDIA_SUBJECTS.embedsResolved, payload);
}

/**
 * A link without a preview. A store that is down (503) fails the whole event, to be tried again
 * once it is back; anything else would fail the same way on every redelivery, so the link is left
 * out rather than holding the message (and a slot of the consumer) back for ever.
 */
function leftOut(deps: PreviewDeps, link: string | undefined, err: unknown): LinkPreview[] {
  if (err instanceof AppError && err.status === 503) throw err;
  if (!(err instanceof AppError && err.status === 400))
    deps.log.error({ err, link }, 'link preview failed; the link is left out of the embeds');
  return [];
}

/**
 * The message keeps its embeds' image urls for good, so their images are marked never to be
 * purged, in the transaction that publishes them. An image purged since its preview was read is
 * left out, so that no message names a file that is gone.
 */
async function keepShownImages(tx: Queryable, embeds: LinkPreview[]): Promise<LinkPreview[]> {
  const imageOf = (embed: LinkPreview) => (embed.imageUrl ? mediaIdFromUrl(embed.imageUrl) : undefined);
  const kept = await markPreviewImagesEmbedded(
    tx,
    embeds.flatMap((embed) => imageOf(embed) ?? []),
  );
  return embeds.map((embed) => {
    const image = imageOf(embed);
    return image && !kept.has(image) ? { ...embed, imageUrl: null } : embed;
  });
}
