import { z } from 'zod';
import { Id, Timestamp } from './common.ts';
import { LinkPreview, UploadedFile } from './records.ts';

export { LinkPreview };

import { defineRpc } from './rpc.ts';

/** Schemas of the media area: request bodies, events and RPC messages. */

/**
 * `rpc.media.file.get`: the stored record behind an uploaded file's id, so that services that
 * accept attachments (DMs, channel messages) never trust a client's url, type or size.
 * Answers 404 for an unknown id.
 */
export const MediaFileRequest = z.object({ id: Id });
export const MediaFileReply = UploadedFile.extend({
  id: Id,
  uploaderId: Id,
  /** The length of an audio file, read from the file at upload; null for anything else. */
  durationSeconds: z.number().min(0).nullable().default(null),
});
export type MediaFileReply = z.infer<typeof MediaFileReply>;

export const MEDIA_RPC = { fileGet: 'rpc.media.file.get' } as const;
export const MediaFileRpc = defineRpc(MEDIA_RPC.fileGet, MediaFileRequest, MediaFileReply);
export const MEDIA_SUBJECTS = { fileUploaded: 'media.file.uploaded', embedsResolved: 'media.embeds.resolved' } as const;

/** The answer of POST /v1/media: the spec's Uploaded file, plus the id that names it. */
export const MediaUpload = UploadedFile.extend({ id: Id }).meta({ id: 'MediaUpload' });

/** The full record of an upload, as its uploader reads it (GET /v1/media/{id}). */
export const MediaFile = UploadedFile.extend({
  id: Id,
  uploaderId: Id,
  /** Hex SHA-256 of the stored bytes; also the file's ETag. */
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  /** The length of an audio file, read from the file at upload; null for anything else. */
  durationSeconds: z.number().min(0).nullable(),
  createdAt: Timestamp,
}).meta({ id: 'MediaFile' });
export type MediaFile = z.infer<typeof MediaFile>;

/** Payload of `media.file.uploaded`. */
export const MediaFileUploaded = MediaFile;

/**
 * The id inside an uploaded file's url (`{MEDIA_PUBLIC_URL}/v1/media/{id}/{filename}`, absolute
 * or path-relative), or undefined when the url is not one of ours. Services that take
 * attachments pass this id to `rpc.media.file.get` and compare the answer with what the client sent.
 */
export function mediaIdFromUrl(url: string): string | undefined {
  const path = /^(?:https?:\/\/[^/?#]+)?(\/v1\/media\/[^?#]*)(?:[?#].*)?$/i.exec(url)?.[1];
  const match = path ? /^\/v1\/media\/([0-9a-f-]{36})\/[^/]+$/i.exec(path) : null;
  return match && Id.safeParse(match[1]).success ? match[1]?.toLowerCase() : undefined;
}

export const LinkPreviewQuery = z.object({ url: z.string().min(1).max(2048) });

/** Where a message with links lives: a server channel (guilds) or a DM conversation (social). */
export const EmbedTarget = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('channel'), channelId: Id, messageId: Id }),
  z.object({ kind: z.literal('dm'), conversationId: Id, messageId: Id }),
]);

/** Payload of `media.embeds.resolved`: the previews of a message's first links, for its owner to store. */
export const EmbedsResolved = z.object({ target: EmbedTarget, embeds: z.array(LinkPreview).max(5) });
export type EmbedsResolved = z.infer<typeof EmbedsResolved>;
