import { Readable } from 'node:stream';
import { z } from 'zod';
import { Id } from '../common.ts';
import { LinkPreview, LinkPreviewQuery, MediaFile, MediaUpload } from '../media.ts';
import { defineRoute } from '../route.ts';

/** The bytes of a stored file, streamed with the upload's own Content-Type. */
const FileBytes = z.custom<Readable>((value) => value instanceof Readable).meta({ description: 'The file bytes' });

export const mediaRoutes = {
  upload: defineRoute({
    method: 'POST',
    path: '/v1/media',
    service: 'media',
    summary: 'Upload one file (multipart/form-data, one part named `file`). contentType is sniffed from the bytes; the url needs no token.',
    multipart: true,
    status: 201,
    response: MediaUpload,
    errors: {
      413: 'The file is larger than the configured limit (default 25 MiB)',
      415: 'The body is not multipart/form-data',
      429: "Over the uploader's quota (files per hour or bytes per day; the message names it), with Retry-After",
      503: 'File storage is unavailable',
    },
  }),
  get: defineRoute({
    method: 'GET',
    path: '/v1/media/:id',
    service: 'media',
    summary: 'The record of an upload; visible to its uploader only',
    params: z.object({ id: Id }),
    status: 200,
    response: MediaFile,
    errors: { 404: 'No such upload, or not yours' },
  }),
  serve: defineRoute({
    method: 'GET',
    path: '/v1/media/:id/:filename',
    service: 'media',
    summary:
      'The file itself, public by its unguessable url (for <img>). Honours Range (206) and If-None-Match (304); active types come as attachments.',
    auth: false,
    params: z.object({ id: Id, filename: z.string().min(1).max(1024) }),
    status: 200,
    response: FileBytes,
    errors: { 404: 'No such file', 416: 'Range not satisfiable' },
  }),
  linkPreview: defineRoute({
    method: 'GET',
    path: '/v1/link-preview',
    service: 'media',
    summary:
      "A link's preview from its OpenGraph, Twitter-card and head tags or oEmbed, cached for a day. Fetched SSRF-safe: only public addresses, at most five redirects, 5 s, 1 MiB; the image is copied and served by this platform.",
    query: LinkPreviewQuery,
    status: 200,
    response: LinkPreview,
    errors: {
      400: 'The url is not http(s), points to an address that is not public, redirects too often, or could not be fetched in time',
      503: 'File storage (or the database) is unavailable while the preview image is kept',
    },
  }),
};
