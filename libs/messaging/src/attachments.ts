import { type AttachmentsBody, type MediaFileReply, MediaFileRpc, mediaIdFromUrl, type UploadedFile } from '@chat/contracts';
import { AppError, type Bus, badRequest, type RequestContext, requestRpc } from '@chat/kit';
import type { z } from 'zod';

/** An attachment as a message stores it: the media service's record, never the client's word. */
export type StoredFile = z.infer<typeof UploadedFile>;

type Caller = Pick<RequestContext, 'userId' | 'requestId'>;

/**
 * Replaces each attachment the client sent with the media service's own record of that file, so
 * that url, type and size are never the client's word. Only the caller's own uploads are accepted;
 * an unknown file and someone else's answer the same 400. Media down: 503 (timeout: 504).
 * Call it before opening a transaction: no connection is held while the media service answers.
 */
export async function resolveAttachments(
  bus: Bus,
  caller: Caller,
  attachments: AttachmentsBody | undefined,
): Promise<Record<string, StoredFile>> {
  const entries = Object.entries(attachments ?? {});
  const resolved = await Promise.all(entries.map(async ([key, file]) => [key, await storedFile(bus, caller, key, file.url)] as const));
  return Object.fromEntries(resolved);
}

async function storedFile(bus: Bus, caller: Caller, key: string, url: string): Promise<StoredFile> {
  const id = mediaIdFromUrl(url);
  if (!id) throw badRequest(`body.attachments.${key}: not a file of the media service`);
  let reply: MediaFileReply;
  try {
    reply = await requestRpc(bus, MediaFileRpc, { id }, { requestId: caller.requestId });
  } catch (err) {
    if (err instanceof AppError && err.status === 404) throw badRequest(`body.attachments.${key}: unknown file`);
    throw err;
  }
  if (reply.uploaderId !== caller.userId) throw badRequest(`body.attachments.${key}: unknown file`);
  return { url: reply.url, filename: reply.filename, contentType: reply.contentType, size: reply.size };
}
