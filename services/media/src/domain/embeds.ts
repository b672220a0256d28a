import { type EmbedsResolved, type LinkPreview, MEDIA_SUBJECTS } from '@chat/contracts';
import { AppError, enqueueEvent, type Queryable } from '@chat/kit';
import { type PreviewDeps, previewLink } from './link-previews.ts';

/** Discord embeds the first five links of a message; so do we. */
export const MAX_EMBEDS = 5;

/**
 * The http(s) links of a message, in order, without repeats. As on Discord, a link wrapped in
 * `<...>` is not embedded; trailing punctuation that ends a sentence is not part of the link.
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
 * Resolves a posted message's links and, when any gave a preview, queues `media.embeds.resolved`
 * for the service that owns the message. A link that cannot be previewed is left out.
 */
export async function resolveEmbeds(deps: PreviewDeps, tx: Queryable, target: EmbedsResolved['target'], content: string): Promise<void> {
  const links = linksIn(content);
  if (links.length === 0) return;
  const previews = await Promise.all(links.map((link) => previewOrNothing(deps, link)));
  const embeds = previews.filter((p): p is LinkPreview => p !== undefined);
  if (embeds.length === 0) return;
  const payload: EmbedsResolved = { target, embeds };
  await enqueueEvent(tx, MEDIA_SUBJECTS.embedsResolved, payload);
}

async function previewOrNothing(deps: PreviewDeps, link: string): Promise<LinkPreview | undefined> {
  try {
    return await previewLink(deps, link);
  } catch (err) {
    if (err instanceof AppError && err.status === 400) return undefined;
    throw err;
  }
}
