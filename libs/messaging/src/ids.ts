import { v7 as uuidv7 } from 'uuid';

/** The millisecond timestamp a UUID v7 carries in its first 48 bits. */
export function msecsOf(id: string): number {
  return Number.parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
}

/** The greatest UUID v7 of a millisecond: every id issued up to then sorts at or before it. */
export function lastIdAt(msecs: number): string {
  const hex = Math.max(0, Math.trunc(msecs)).toString(16).padStart(12, '0');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-7fff-bfff-ffffffffffff`;
}

/**
 * The id of the next message of a channel or conversation: a fresh UUID v7, or one a millisecond
 * past the latest id when this process's clock is behind the one that issued it (another replica),
 * so that ids grow in commit order and cursor paging never skips a message.
 */
export function nextMessageId(latestId: string | null, fresh: string = uuidv7()): string {
  if (latestId === null || fresh > latestId) return fresh;
  return uuidv7({ msecs: msecsOf(latestId) + 1 });
}
