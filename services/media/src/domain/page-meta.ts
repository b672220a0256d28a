import { Parser } from 'htmlparser2';

/** What a page says about itself in its head: OpenGraph, Twitter card, plain HTML, its oEmbed link. */
export interface PageMeta {
  title?: string;
  description?: string;
  siteName?: string;
  image?: string;
  type?: string;
  oembedUrl?: string;
}

/** Meta names in order of preference for each field (the first one present wins). */
const PREFERENCE: Record<Exclude<keyof PageMeta, 'oembedUrl'>, string[]> = {
  title: ['og:title', 'twitter:title', '<title>'],
  description: ['og:description', 'twitter:description', 'description'],
  siteName: ['og:site_name', 'application-name'],
  image: ['og:image:secure_url', 'og:image', 'og:image:url', 'twitter:image', 'twitter:image:src'],
  type: ['og:type'],
};

const MAX_FIELD = 1024;

/** Where the first `<title>` of the document is, as the parser goes. */
type TitleState = 'before' | 'inside' | 'done';
/** Elements whose `<title>` is their own (an SVG icon's tooltip), never the document's. */
const FOREIGN = new Set(['svg', 'math']);

/**
 * Reads the tags of a page with a real HTML parser, forgiving like a browser; the first of each tag
 * wins. The title is the document's first `<title>` outside SVG and MathML, as `document.title`
 * takes it.
 */
export function parsePageMeta(html: string, pageUrl: string): PageMeta {
  const found = new Map<string, string>();
  let titleState: TitleState = 'before';
  let foreignDepth = 0;
  let title = '';
  let oembed: string | undefined;
  const parser = new Parser(
    {
      onopentag(name, attrs) {
        if (FOREIGN.has(name)) foreignDepth++;
        if (name === 'title' && titleState === 'before' && foreignDepth === 0) titleState = 'inside';
        if (name === 'meta') {
          const key = (attrs.property ?? attrs.name ?? '').trim().toLowerCase();
          const content = attrs.content?.trim();
          if (key && content && !found.has(key)) found.set(key, content);
        }
        if (name === 'link' && /\balternate\b/i.test(attrs.rel ?? '') && attrs.type?.toLowerCase() === 'application/json+oembed') {
          oembed ??= attrs.href;
        }
      },
      ontext(text) {
        if (titleState === 'inside') title += text;
      },
      onclosetag(name) {
        if (FOREIGN.has(name)) foreignDepth = Math.max(0, foreignDepth - 1);
        if (name === 'title' && titleState === 'inside') titleState = 'done';
      },
    },
    { decodeEntities: true, lowerCaseTags: true, lowerCaseAttributeNames: true },
  );
  parser.write(html);
  parser.end();
  if (title.trim()) found.set('<title>', title.replace(/\s+/g, ' ').trim());

  const meta: PageMeta = {};
  for (const [field, names] of Object.entries(PREFERENCE) as [keyof typeof PREFERENCE, string[]][]) {
    const value = names.map((n) => found.get(n)).find((v) => v !== undefined);
    if (value !== undefined) meta[field] = value.slice(0, MAX_FIELD);
  }
  const image = meta.image && absolute(meta.image, pageUrl);
  if (image) meta.image = image;
  else delete meta.image;
  const oembedUrl = oembed && absolute(oembed, pageUrl);
  if (oembedUrl) meta.oembedUrl = oembedUrl;
  return meta;
}

function absolute(value: string, base: string): string | undefined {
  return URL.canParse(value, base) ? new URL(value, base).href : undefined;
}
