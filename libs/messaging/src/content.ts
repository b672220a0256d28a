import { badRequest } from '@chat/kit';
import type { StoredFile } from './attachments.ts';

/** A message needs words or files: content may be blank only when it carries attachments. */
export function assertHasBody(content: string, attachments: Record<string, StoredFile>): void {
  if (content.trim() === '' && Object.keys(attachments).length === 0) {
    throw badRequest('body.content: must be 1-4000 characters unless attachments are given');
  }
}
