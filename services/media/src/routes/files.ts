import { Readable } from 'node:stream';
import { mediaRoutes } from '@chat/contracts';
import { AppError, contextOf, route } from '@chat/kit';
import { create as contentDisposition } from 'content-disposition';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import parseRange from 'range-parser';
import type { MediaDeps } from '../deps.ts';
import { isInlineSafe } from '../domain/content-type.ts';
import { findServedFile, getOwnFile, readFile, type ServedFile } from '../domain/files.ts';

/** The bytes of a file never change under its id: caches may keep them for a year. */
const CACHE_FOREVER = 'public, max-age=31536000, immutable';
/** Even if a browser opens a file as a page, it runs nothing and loads nothing. */
const SANDBOX = "default-src 'none'; sandbox";

/** GET /v1/media/{id} (the record, to its uploader) and GET /v1/media/{id}/{filename} (the bytes). */
export async function fileRoutes(app: FastifyInstance, deps: MediaDeps): Promise<void> {
  route(app, mediaRoutes.get, async (req) => getOwnFile(deps, contextOf(req), req.params.id));

  route(app, mediaRoutes.serve, async (req, reply) => {
    const file = await findServedFile(deps, req.params.id, req.params.filename);
    const etag = `"${file.sha256}"`;
    if (matchesEtag(req.headers['if-none-match'], etag)) {
      reply.code(304).headers({ etag, 'cache-control': CACHE_FOREVER });
      return Readable.from([]);
    }
    const range = requestedRange(req, file.size, etag);
    // Opened before any header is set, so that a failure is answered as a plain JSON error.
    const bytes = await readFile(deps, file, range);
    setFileHeaders(reply, file, etag);
    if (range) {
      reply
        .code(206)
        .header('content-range', `bytes ${range.start}-${range.end}/${file.size}`)
        .header('content-length', range.end - range.start + 1);
    } else {
      reply.header('content-length', file.size);
    }
    return bytes;
  });
}

function setFileHeaders(reply: FastifyReply, file: ServedFile, etag: string): void {
  const inline = isInlineSafe(file.contentType);
  reply.headers({
    'content-type': file.contentType === 'text/plain' ? 'text/plain; charset=utf-8' : file.contentType,
    etag,
    'cache-control': CACHE_FOREVER,
    'accept-ranges': 'bytes',
    'content-disposition': contentDisposition(file.filename, { type: inline ? 'inline' : 'attachment' }),
    'x-content-type-options': 'nosniff',
    'content-security-policy': SANDBOX,
  });
}

function matchesEtag(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  return ifNoneMatch.trim() === '*' || ifNoneMatch.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag);
}

/**
 * The one byte range to serve, or undefined for the whole file. As RFC 9110 allows, a Range that
 * is malformed, asks for several ranges, or comes with an If-Range for another version is
 * ignored; one that lies wholly past the end is a 416.
 */
function requestedRange(req: FastifyRequest, size: number, etag: string): { start: number; end: number } | undefined {
  const header = req.headers.range;
  if (!header) return undefined;
  const ifRange = req.headers['if-range'];
  if (ifRange !== undefined && ifRange !== etag) return undefined;
  const ranges = parseRange(size, header, { combine: true });
  if (ranges === -1) {
    throw new AppError(416, 'Range not satisfiable', { headers: { 'content-range': `bytes */${size}` } });
  }
  if (ranges === -2 || ranges.type !== 'bytes' || ranges.length !== 1) return undefined;
  return ranges[0];
}
