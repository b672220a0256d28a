import type { LinkPreview } from '@chat/contracts';

/** Which of a message's link previews still belong to its text (pure: edits and media's late answers both ask). */

/**
 * Of these previews, those of links the content has. An edit keeps the previews of the links it
 * keeps and drops the others; new links get none (media resolves posted messages only).
 */
export function previewsOfLinksIn(content: string, previews: readonly LinkPreview[]): LinkPreview[] {
  const links = new Set(linksIn(content));
  return previews.filter((p) => links.has(p.url));
}

/**
 * The http(s) links of the content as a preview names them: media's rule (`linksIn` and
 * `normaliseUrl` in services/media/src/domain): a link in `<...>` is not previewed, trailing
 * sentence punctuation is not part of the link, and the url is parsed, without its fragment.
 */
function linksIn(content: string): string[] {
  const links: string[] = [];
  for (const match of content.matchAll(/(<)?(https?:\/\/[^\s<>]+)(>)?/gi)) {
    if (match[1] && match[3]) continue;
    const link = (match[2] ?? '').replace(/[.,;:!?)\]'"]+$/, '');
    if (!URL.canParse(link)) continue;
    const url = new URL(link);
    url.hash = '';
    // An empty query (`/page?`) is the same page: setting it drops the lone "?".
    if (url.search === '') url.search = '';
    links.push(url.href);
  }
  return links;
}
