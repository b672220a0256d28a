import { type EmbedsResolved, type LinkPreview, MEDIA_SUBJECTS, mediaIdFromUrl } from '@chat/contracts';
import { AppError, enqueueEvent, type Queryable } from '@chat/kit';
import { linksIn } from '@chat/messaging';
import { markPreviewImagesEmbedded } from '../db/preview-images.ts';
import { type PreviewDeps, previewLink } from './link-previews.ts';

/**
 * The previews of a posted message's links. Called before any transaction opens: the fetches take
 * seconds, and only the cache is read and written meanwhile, a statement at a time. Each link
 * stands alone: one that cannot be previewed is left out, and the others are still answered.
 */
export async function previewLinksOf(deps: PreviewDeps, content: string): Promise<LinkPreview[]> {
  const links = linksIn(content);
  const outcomes = await Promise.allSettled(links.map((link) => previewLink(deps, link)));
  return outcomes.flatMap((outcome, i) => (outcome.status === 'fulfilled' ? [outcome.value] : leftOut(deps, links[i], outcome.reason)));
}

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
