import { z } from 'zod';
import { Id } from './common.ts';
import { UploadedFile } from './records.ts';

/** Schemas of the media area: request bodies, events and RPC messages. */

/**
 * `rpc.media.file.get`: the stored record behind an uploaded file's id, so that services that
 * accept attachments (DMs, channel messages) never trust a client's url, type or size.
 * Answers 404 for an unknown id.
 */
export const MediaFileRequest = z.object({ id: Id });
export const MediaFileReply = UploadedFile.extend({ id: Id, uploaderId: Id });
export type MediaFileReply = z.infer<typeof MediaFileReply>;

export const MEDIA_RPC = { fileGet: 'rpc.media.file.get' } as const;
export const MEDIA_SUBJECTS = { fileUploaded: 'media.file.uploaded' } as const;
