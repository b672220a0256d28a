/** Longest file name kept, in characters (Discord keeps names of about this length). */
export const MAX_FILENAME_LENGTH = 128;
const MAX_EXTENSION_LENGTH = 16;
const FALLBACK_NAME = 'file';

/**
 * A file name that is safe to show, to put in a URL path segment and in a Content-Disposition
 * header: the last path segment only, without control or format characters (CR, LF, NUL, bidi
 * overrides), without the characters Windows reserves, spaces as underscores, no leading dots,
 * at most MAX_FILENAME_LENGTH characters with the extension kept. The storage key never comes
 * from it.
 */
export function sanitizeFilename(raw: string | undefined): string {
  const lastSegment = (raw ?? '').normalize('NFC').split(/[/\\]/).pop() ?? '';
  const cleaned = lastSegment
    .replace(/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu, '')
    .replace(/[<>:"|?*%#]/g, '_')
    .replace(/\s+/g, '_')
    .replace(/^\.+/, '')
    .replace(/\.+$/, '');
  return truncateKeepingExtension(cleaned) || FALLBACK_NAME;
}

function truncateKeepingExtension(name: string): string {
  const chars = Array.from(name); // code points, so that no surrogate pair is cut in half
  if (chars.length <= MAX_FILENAME_LENGTH) return name;
  const dot = name.lastIndexOf('.');
  const extension = dot > 0 ? Array.from(name.slice(dot)) : [];
  const keep = extension.length > 1 && extension.length <= MAX_EXTENSION_LENGTH ? extension : [];
  return chars.slice(0, MAX_FILENAME_LENGTH - keep.length).join('') + keep.join('');
}
