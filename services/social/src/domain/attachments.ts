import { type AttachmentsBody, MEDIA_RPC, MediaFileReply } from '@chat/contracts';
import { AppError, type Bus, badRequest, type RequestContext, requestRpc } from '@chat/kit';
import type { StoredFile } from '../db/messages.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The media file id of an upload's url: the first path segment after /v1/media/ (absolute or relative url). */
export function mediaFileId(url: string): string | undefined {
  let path: string;
  try {
    path = new URL(url, 'http://relative.invalid').pathname;
  } catch {
    return undefined;
  }
  const id = /^\/v1\/media\/([^/]+)(?:\/|$)/.exec(path)?.[1];
  return id && UUID.test(id) ? id.toLowerCase() : undefined;
}

/**
 * Replaces each attachment the client sent with the media service's own record of that file, so
 * that url, type and size are never the client's word. Only the caller's own uploads are accepted;
 * an unknown file and someone else's answer the same 400. Media down: 503 (timeout: 504).
 */
export async function resolveAttachments(
  bus: Bus,
  ctx: RequestContext,
  attachments: AttachmentsBody | undefined,
): Promise<Record<string, StoredFile>> {
  const entries = Object.entries(attachments ?? {});
  const resolved = await Promise.all(entries.map(async ([key, file]) => [key, await storedFile(bus, ctx, key, file.url)] as const));
  return Object.fromEntries(resolved);
}

async function storedFile(bus: Bus, ctx: RequestContext, key: string, url: string): Promise<StoredFile> {
  const id = mediaFileId(url);
  if (!id) throw badRequest(`attachments.${key}: not a file of the media service`);
  let reply: MediaFileReply;
  try {
    reply = MediaFileReply.parse(await requestRpc(bus, MEDIA_RPC.fileGet, { id }, { requestId: ctx.requestId }));
  } catch (err) {
    if (err instanceof AppError && err.status === 404) throw badRequest(`attachments.${key}: unknown file`);
    throw err;
  }
  if (reply.uploaderId !== ctx.userId) throw badRequest(`attachments.${key}: unknown file`);
  return { url: reply.url, filename: reply.filename, contentType: reply.contentType, size: reply.size };
}
