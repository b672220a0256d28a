import { type MediaUpload, mediaRoutes } from '@chat/contracts';
import {
  AppError,
  badRequest,
  commitIdempotent,
  contextOf,
  findIdempotentAnswer,
  idempotencyKeyOf,
  type RequestContext,
  replayAnswer,
  route,
  streamedRequestFingerprint,
  tooManyRequests,
  userIdempotencyScope,
} from '@chat/kit';
import multipart, { type Multipart, type MultipartFile } from '@fastify/multipart';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { z } from 'zod';
import type { MediaDeps } from '../deps.ts';
import { DoesNotFitQuota, requireRoomFor } from '../domain/quota.ts';
import { discardFile, type IncomingFile, measureFile, recordFile, type StoredFile, storeFile } from '../domain/uploads.ts';

/** The answer of an upload. */
type Uploaded = z.output<typeof MediaUpload>;

const ONE_FILE = 'Send multipart/form-data with exactly one part named "file"';

/**
 * POST /v1/media: one file, streamed into the store, then recorded with its event. Its
 * Idempotency-Key is handled here rather than by the kit's route option, which would open the
 * request's transaction before the body streams in and hold a pool connection for the whole
 * transfer: the bytes are stored first, and only recording (or replaying) the answer holds one.
 */
export async function uploadRoutes(app: FastifyInstance, deps: MediaDeps): Promise<void> {
  await app.register(async (scope) => {
    // This scope reads multipart and nothing else: any other body reaches the handler unread,
    // after the token check, and is answered 415 there (the kit's 415 speaks of JSON).
    scope.removeAllContentTypeParsers();
    await scope.register(multipart, {
      // files: 2 so that a second file part reaches the handler and gets its clear 400.
      limits: { fileSize: deps.config.MEDIA_MAX_UPLOAD_BYTES, files: 2, fields: 16, fieldSize: 64 * 1024, parts: 24, headerPairs: 32 },
    });
    scope.addContentTypeParser('*', (_req, _payload, done) => done(null));

    route(scope, mediaRoutes.upload, async (req, reply) => {
      const key = idempotencyKeyOf(req);
      if (!req.isMultipart()) throw new AppError(415, ONE_FILE);
      const ctx = contextOf(req);
      return key ? uploadOnce(deps, req, reply, ctx, key) : uploaded(await recordFile(deps, ctx, await receiveUpload(deps, req, ctx)));
    });
  });
}

/**
 * An upload under an Idempotency-Key. A key already answered is replayed once the body has been
 * read and hashed (422 if it is another file), storing nothing and counting against no quota. A
 * new one stores the bytes holding no connection, then records the file and its answer together
 * under the key's lock; if another request with the key committed meanwhile, its answer is
 * replayed and these bytes go.
 */
async function uploadOnce(deps: MediaDeps, req: FastifyRequest, reply: FastifyReply, ctx: RequestContext, key: string): Promise<Uploaded> {
  const scope = userIdempotencyScope(ctx.userId);
  const earlier = await findIdempotentAnswer(deps.pool, scope, key);
  if (earlier) {
    const file = await receiveOneFile(req.parts(), { fileBytes: deps.config.MEDIA_MAX_UPLOAD_BYTES, quotaBytes: Infinity }, measureFile);
    return replayAnswer(earlier, uploadFingerprint(req, file), reply).body as Uploaded;
  }
  const stored = await receiveUpload(deps, req, ctx);
  const claim = { scope, key, fingerprint: uploadFingerprint(req, stored) };
  try {
    const answer = await commitIdempotent(deps.pool, reply, claim, async () => ({
      status: mediaRoutes.upload.status,
      body: uploaded(await recordFile(deps, ctx, stored)),
    }));
    if (answer.replayed) await discardFile(deps, stored);
    return answer.body as Uploaded;
  } catch (err) {
    await discardFile(deps, stored);
    throw err;
  }
}

/** Two uploads are the same request when they carry the same bytes under the same name, however the body was framed. */
function uploadFingerprint(req: FastifyRequest, file: { sha256: string; filename: string }): string {
  return streamedRequestFingerprint(req, `${file.sha256} ${file.filename}`);
}

function uploaded({ id, url, filename, contentType, size }: Uploaded): Uploaded {
  return { id, url, filename, contentType, size };
}

/** The file part stored, within the size limit and the uploader's quotas (429 when it does not fit). */
async function receiveUpload(deps: MediaDeps, req: FastifyRequest, ctx: RequestContext): Promise<StoredFile> {
  // A full quota is refused before the body is read; one byte must still fit.
  const room = await requireRoomFor(deps.pool, deps, ctx.userId, 1);
  const limits = { fileBytes: deps.config.MEDIA_MAX_UPLOAD_BYTES, quotaBytes: room };
  const store = (file: IncomingFile) => storeFile(deps, file);
  return receiveOneFile(req.parts(), limits, store, (stored) => discardFile(deps, stored)).catch(async (err) => {
    if (!(err instanceof DoesNotFitQuota)) throw err;
    // Throws the quota's 429 with the time at which a file of this size fits.
    await requireRoomFor(deps.pool, deps, ctx.userId, err.size);
    // Room was freed while the file streamed in: it still was not stored, so ask again at once.
    throw tooManyRequests(1, `Upload quota exceeded: at most ${deps.config.MEDIA_QUOTA_BYTES_PER_DAY} bytes per day`);
  });
}

/**
 * Reads the parts in order: the file part is taken (stored, or only measured) as it streams in,
 * other fields are ignored (as unknown body fields are). When anything is wrong, during or after
 * the file, what was taken is undone.
 */
async function receiveOneFile<T>(
  parts: AsyncIterable<Multipart>,
  limits: Limits,
  take: (file: IncomingFile) => Promise<T>,
  undo: (taken: T) => Promise<void> = async () => {},
): Promise<T> {
  let taken: { file: T } | undefined;
  try {
    for await (const part of parts) {
      if (part.fieldname !== 'file') {
        if (part.type === 'file') throw badRequest(`Unexpected file part ${JSON.stringify(part.fieldname.slice(0, 64))}. ${ONE_FILE}`);
        continue;
      }
      if (part.type !== 'file') throw badRequest('The part "file" must be a file (give it a filename)');
      if (taken) throw badRequest(ONE_FILE);
      taken = { file: await take({ filename: part.filename, bytes: withinLimits(part.file, limits) }) };
    }
  } catch (err) {
    if (taken) await undo(taken.file);
    throw asClientError(err, limits.fileBytes);
  }
  // The parser drops a part whose name or filename holds a line break, so say so.
  if (!taken) throw badRequest(`Missing the part named "file" (parts with line breaks in their names are dropped). ${ONE_FILE}`);
  return taken.file;
}

interface Limits {
  /** The size limit of one file (413 past it). */
  fileBytes: number;
  /** The room left in the uploader's day (429 past it). */
  quotaBytes: number;
}

/**
 * The bytes of a file part; one byte over the size limit fails it at once with 413. Past the room
 * in the uploader's quota nothing more is passed on (the store gets no more bytes and aborts), but
 * the part is still read up to the size limit: a file over that limit stays a 413, and one within
 * it fails with its size known, for the 429's Retry-After.
 */
async function* withinLimits(file: MultipartFile['file'], limits: Limits): AsyncGenerator<Buffer, void> {
  file.once('limit', () => file.destroy(fileTooLarge(limits.fileBytes)));
  let size = 0;
  for await (const chunk of file) {
    size += (chunk as Buffer).length;
    if (size <= limits.quotaBytes) yield chunk as Buffer;
  }
  if (file.truncated) throw fileTooLarge(limits.fileBytes);
  if (size > limits.quotaBytes) throw new DoesNotFitQuota(size);
}

function fileTooLarge(limit: number): AppError {
  return new AppError(413, `The file is larger than the upload limit of ${limit} bytes`);
}

/** Errors of the multipart parser as answers: limits are 413, the rest is a malformed body. */
function asClientError(err: unknown, limit: number): unknown {
  if (err instanceof AppError) return err;
  const { code, statusCode } = err as { code?: string; statusCode?: number };
  if (code === 'FST_REQ_FILE_TOO_LARGE') return fileTooLarge(limit);
  if (statusCode === 413) return new AppError(413, `Too many parts. ${ONE_FILE}`, { cause: err });
  if (code === 'FST_MP_PREMATURE_CLOSE') return new AppError(400, 'The upload was interrupted', { cause: err });
  if (isParserError(err)) return new AppError(400, `Malformed multipart body. ${ONE_FILE}`, { cause: err });
  return err;
}

/** busboy throws plain Errors; these are the messages it uses for a body it cannot parse. */
function isParserError(err: unknown): boolean {
  return err instanceof Error && /multipart|boundary|needle/i.test(err.message);
}
