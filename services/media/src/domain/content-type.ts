import { fileTypeFromBuffer } from 'file-type';

export const OCTET_STREAM = 'application/octet-stream';

/** How many leading bytes the text and markup checks look at. */
const TEXT_SAMPLE_BYTES = 8 * 1024;

/**
 * What the bytes are, from the first part of a file: magic numbers (file-type) first, then
 * text, told apart from markup that a browser would run. The client's declared type and the
 * file name play no part.
 */
export async function sniffContentType(head: Buffer): Promise<string> {
  const detected = await fileTypeFromBuffer(head);
  if (detected?.mime === 'application/xml') return looksLikeSvg(head) ? 'image/svg+xml' : detected.mime;
  if (detected) return detected.mime;
  const text = decodeText(head.subarray(0, TEXT_SAMPLE_BYTES));
  if (text === undefined) return OCTET_STREAM;
  return markupType(text) ?? 'text/plain';
}

/** UTF-8 without the control bytes that mark binary data (WHATWG MIME Sniffing), or undefined. */
function decodeText(sample: Buffer): string | undefined {
  if (sample.length === 0) return undefined;
  if (sample.some(isBinaryDataByte)) return undefined;
  try {
    // stream: a multi-byte character cut by the end of the sample is not an error.
    return new TextDecoder('utf-8', { fatal: true }).decode(sample, { stream: true });
  } catch {
    return undefined;
  }
}

function isBinaryDataByte(byte: number): boolean {
  return byte <= 0x08 || byte === 0x0b || (byte >= 0x0e && byte <= 0x1a) || (byte >= 0x1c && byte <= 0x1f);
}

/**
 * The tags with which the WHATWG "identify an unknown MIME type" rules recognise HTML, each
 * followed by a space or `>`; a browser that sniffs would render such a file as a page.
 */
const HTML_START = /^<(?:!doctype html|html|head|script|iframe|h1|div|font|table|a|style|title|b|body|br|p|!--)[\s>]/i;

function markupType(text: string): string | undefined {
  const start = text.replace(/^\uFEFF?\s*/, '');
  if (HTML_START.test(start)) return 'text/html';
  if (/^<svg[\s>]/i.test(start)) return 'image/svg+xml';
  if (/^<\?xml[\s?]/i.test(start)) return looksLikeSvg(Buffer.from(start)) ? 'image/svg+xml' : 'application/xml';
  return undefined;
}

function looksLikeSvg(head: Buffer): boolean {
  return /<svg[\s>]/i.test(head.subarray(0, TEXT_SAMPLE_BYTES).toString('utf8'));
}

/**
 * Types a browser shows without running anything. Everything else (HTML, SVG, XML, scripts,
 * PDF, archives, unknown bytes) is served as a download.
 */
export function isInlineSafe(contentType: string): boolean {
  if (contentType === 'image/svg+xml') return false;
  return /^(?:image|audio|video)\//.test(contentType) || contentType === 'text/plain';
}
