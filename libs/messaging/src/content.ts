import { EXCERPT_LENGTH } from '@chat/contracts';
import { badRequest } from '@chat/kit';
import type { StoredFile } from './attachments.ts';

/** A message needs words or files: content may be blank only when it carries attachments. */
export function assertHasBody(content: string, attachments: Record<string, StoredFile>): void {
  if (content.trim() === '' && Object.keys(attachments).length === 0) {
    throw badRequest('body.content: must be 1-4000 characters unless attachments are given');
  }
}

/** The type of a message someone writes: a reply when it answers another message. */
export function writtenMessageType(replyToId: string | null): 'default' | 'reply' {
  return replyToId === null ? 'default' : 'reply';
}

/** The message with the client's nonce, when it sent one (Discord echoes it on the post and its event only). */
export function withNonce<M extends object>(message: M, nonce: string | undefined): M & { nonce?: string } {
  return nonce === undefined ? message : { ...message, nonce };
}

/** The start of a message on one line, at most EXCERPT_LENGTH characters (an ellipsis marks a cut): what a notification shows. */
export function excerptOf(content: string): string {
  const line = content.replace(/\s+/g, ' ').trim();
  return line.length <= EXCERPT_LENGTH ? line : `${line.slice(0, EXCERPT_LENGTH - 1)}…`;
}
