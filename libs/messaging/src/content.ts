import { EXCERPT_LENGTH, type MessageType } from '@chat/contracts';
import { badRequest, forbidden } from '@chat/kit';
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

/** What people write; a system message (a join, a pin, a call) stays as posted. */
const WRITTEN_TYPES: ReadonlySet<MessageType> = new Set(['default', 'reply']);

/** Whether a person wrote the message (not a system message: a join, a pin, a call). */
export const isWritten = (type: MessageType): boolean => WRITTEN_TYPES.has(type);

/** Only what people write can be edited, even by its author (who joined, pinned or rang): Discord refuses with 50021. */
export function assertEditable(type: MessageType): void {
  if (!isWritten(type)) throw forbidden('Cannot edit a system message');
}

/** The message with the client's nonce, when it sent one (Discord echoes it on the post and its event only). */
export function withNonce<M extends object>(message: M, nonce: string | undefined): M & { nonce?: string } {
  return nonce === undefined ? message : { ...message, nonce };
}

const UUID = '[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}';
const MENTION_MARKUP = new RegExp(`<@(!|&)?(${UUID})>`, 'g');

/**
 * The start of a message as a notification shows it: mention markup (`<@id>`, `<@&id>`) written
 * as `@name` with the names given (`@user` and `@role` when unknown), on one line, at most
 * EXCERPT_LENGTH characters (an ellipsis marks a cut).
 */
export function excerptOf(content: string, names: Readonly<Record<string, string>> = {}): string {
  const readable = content.replace(MENTION_MARKUP, (_, kind: string | undefined, id: string) => {
    const name = names[id.toLowerCase()];
    return `@${name ?? (kind === '&' ? 'role' : 'user')}`;
  });
  const line = readable.replace(/\s+/g, ' ').trim();
  return line.length <= EXCERPT_LENGTH ? line : `${line.slice(0, EXCERPT_LENGTH - 1)}…`;
}
