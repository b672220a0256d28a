import { z } from 'zod';
import { ALL_PERMISSIONS } from './permissions.ts';

/**
 * Every record id is a UUID (v7 where we generate it), always in lower case: ids are compared,
 * keyed (maps, caches, pair keys, jsonb) and echoed as text, so one a client wrote in upper case
 * is folded here, at every door (path, body, query, event, RPC), and names the same record.
 */
export const Id = z.uuid({ error: 'must be a UUID' }).toLowerCase();

/** Whether a name from elsewhere (a media room, a participant's identity) is one of our ids. */
export const isId = (value: string): boolean => Id.safeParse(value).success;

/** Characters that change how the text around them shows: controls, line and paragraph separators, bidi embeddings, overrides and isolates. */
const LAYOUT_CONTROL = /[\p{Cc}\u2028\u2029\u202A-\u202E\u2066-\u2069]/u;
/**
 * Text that shows as nothing: spaces, format characters (zero-width ones), what Unicode says a
 * renderer may draw as nothing (Default_Ignorable_Code_Point: variation selectors, the combining
 * grapheme joiner, Khmer inherent vowels, Mongolian free variation selectors, tags) and the blank
 * fillers of Hangul and Braille.
 */
const INVISIBLE = /^[\p{Z}\p{Cf}\p{Default_Ignorable_Code_Point}\u115F\u1160\u2800\u3164\uFFA0]*$/u;
const NO_LAYOUT_CONTROL = 'must not contain control, line-break or bidi-override characters';

/**
 * A name others see on one line (display names, nicknames, servers, channels, roles, webhooks,
 * track titles): trimmed, in Unicode NFC (so that one name is stored, compared and searched in
 * one spelling whether a client composed its accents or not), with a visible character, and
 * nothing that could break the line, reverse the text around it or escape into a terminal, so
 * that a name cannot pass for a blank or for another.
 */
export function shownName(min: number, max: number) {
  return z
    .string()
    .trim()
    .normalize('NFC')
    .min(min)
    .max(max)
    .refine((s) => !LAYOUT_CONTROL.test(s), NO_LAYOUT_CONTROL)
    .refine((s) => !INVISIBLE.test(s), 'must show at least one visible character');
}

/** One line of free text others see (a custom status); may be empty. */
export const oneLineText = (max: number) =>
  z
    .string()
    .max(max)
    .refine((s) => !LAYOUT_CONTROL.test(s), NO_LAYOUT_CONTROL);

/** Free text over several lines (a bio): line breaks (LF, or CRLF as Windows ends lines), but no other control characters. */
export const multiLineText = (max: number) =>
  z
    .string()
    .max(max)
    .refine((s) => !LAYOUT_CONTROL.test(s.replace(/\r\n|[\n\t]/g, '')), 'must not contain control or bidi-override characters');

/**
 * The longest path parameter a router must match, as it arrives (percent-encoded): a file's name
 * in its url (up to 1,024 characters, 128 in practice) can take 12 bytes a character, encoded.
 * Routers default to 100; past their limit a path matches no route at all.
 */
export const MAX_PATH_PARAM_LENGTH = 2048;
export const Timestamp = z.iso.datetime({ offset: true });
const WRITTEN_INSTANT = /^(\d{4})-.*?(?:Z|([+-])(\d{2}):(\d{2}))$/i;
/**
 * A time a client sends to be stored: what PostgreSQL's timestamptz takes and a clock can show.
 * ISO 8601 alone allows year 0000 and offsets up to ±23:59, which the database refuses (a 500).
 */
export const StoredTimestamp = Timestamp.refine((value) => {
  const [, year = '0', , hours = '0', minutes = '0'] = WRITTEN_INSTANT.exec(value) ?? [];
  const utcYear = new Date(value).getUTCFullYear();
  return Number(year) >= 1 && Number(hours) * 60 + Number(minutes) <= 14 * 60 && utcYear >= 1 && utcYear <= 9999;
}, 'must be an instant between the years 1 and 9999 with an offset within ±14:00');
export const ErrorBody = z.object({ error: z.string() }).meta({ id: 'Error' });
export const Empty = z.object({}).meta({ id: 'Empty' });

export const IdParams = z.object({ id: Id });

/** Cursor paging of lists that grow: newest first, `before`/`after` an id. */
export const PageQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(50),
  before: Id.optional(),
  after: Id.optional(),
});

export const MAX_URL_LENGTH = 2048;

/** This platform's own uploads, path-relative: `/v1/media/{id}/{filename}` (a name, never `.` or `..`). */
const OWN_MEDIA_PATH = /^\/v1\/media\/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\/(?!\.\.?$)[^/?#\\]+$/i;

function parseUrl(value: string): URL | undefined {
  try {
    return new URL(value);
  } catch {
    return undefined;
  }
}

/**
 * Whitespace, control and format characters (bidi overrides, zero-width ones) in a URL: parsers
 * drop some of them (`java\tscript:`), and the others make the URL show as what it is not.
 */
const URL_HIDDEN_CHARACTER = /[\s\p{Cc}\p{Cf}]/u;

/** A URL a client stores for others to see or open shows exactly what it is: no whitespace, control or format characters. */
export const hasNoHiddenUrlCharacter = (value: string): boolean => !URL_HIDDEN_CHARACTER.test(value);

function isImageUrl(value: string): boolean {
  if (!hasNoHiddenUrlCharacter(value)) return false;
  if (OWN_MEDIA_PATH.test(value)) return true;
  const url = parseUrl(value);
  return (
    url !== undefined &&
    (url.protocol === 'https:' || url.protocol === 'http:') &&
    /^https?:\/\/[^/]/i.test(value) &&
    url.username === '' &&
    url.password === ''
  );
}

/**
 * Every URL a client stores for others to load (avatarUrl, iconUrl, bannerUrl, webhook avatars):
 * `https:` or `http:` with a host and no credentials, or a path of this platform's own media
 * (`/v1/media/{id}/{filename}`); at most 2,048 characters. Never `javascript:`, `data:`, `file:`
 * or any other scheme a client might open (issue 16).
 */
export const ImageUrl = z
  .string()
  .refine((value) => value.length <= MAX_URL_LENGTH && isImageUrl(value), {
    error: `must be an http(s) URL or a /v1/media/ URL of this platform, at most ${MAX_URL_LENGTH} characters`,
  })
  .meta({ id: 'ImageUrl', format: 'uri-reference', maxLength: MAX_URL_LENGTH });

/**
 * A Discord-style permission mask; all bits used stay below 2^53 so JSON numbers carry them. What
 * the platform answers, publishes and asks with: a stored mask never fails it. Bodies take
 * DefinedPermissionMask.
 */
export const PermissionMask = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);

/** The positions of the bits of `mask` that no permission of this platform has, lowest first. */
function undefinedBitPositions(mask: number): number[] {
  if (!Number.isSafeInteger(mask) || mask < 0) return [];
  const undefinedBits = BigInt(mask) & ~ALL_PERMISSIONS;
  return [...undefinedBits.toString(2)].reverse().flatMap((bit, position) => (bit === '1' ? [position] : []));
}

/**
 * A permission mask a client sends to be stored (a role's permissions, an override's bits): only
 * bits this platform defines, the others answered 400 by position. Nobody holds an undefined bit,
 * so without this the grant check refused them as beyond the actor, the owner included.
 */
export const DefinedPermissionMask = PermissionMask.superRefine((mask, ctx) => {
  const positions = undefinedBitPositions(mask);
  if (positions.length > 0) {
    ctx.addIssue({ code: 'custom', message: `has permission bits this platform does not define: ${positions.join(', ')}` });
  }
});

/**
 * The one query of every list that pages by its key (DESIGN.md: limit 50 by default, at most 100;
 * a cursor on the list's order key). Each list is in ascending order of the key its contract
 * names; `after` takes the keys greater than a cursor, `before` the `limit` keys just below one
 * (still answered in ascending order), both together the keys between them. The answer keeps
 * its shape: a bare array stays a bare array, and a page shorter than `limit` is the last one.
 */
export const ListPageQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(50),
  after: z
    .string()
    .regex(/^[A-Za-z0-9-]{1,64}$/, 'not a cursor')
    .optional(),
  before: z
    .string()
    .regex(/^[A-Za-z0-9-]{1,64}$/, 'not a cursor')
    .optional(),
});
export type ListPageQuery = z.infer<typeof ListPageQuery>;
