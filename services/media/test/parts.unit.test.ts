import { mediaIdFromUrl } from '@chat/contracts';
import { describe, expect, it } from 'vitest';
import { partsOf } from '../src/db/storage.ts';

/** Regroups `chunks` (of these lengths, counting bytes) the way an upload consumes parts. */
async function regroup(chunks: number[], size: number) {
  let next = 0;
  const input: Buffer[] = chunks.map((length) => Buffer.from(Array.from({ length }, () => next++ % 256)));
  async function* source() {
    yield* input;
  }
  // One part kept "on the wire" while the next one fills, as putMultipart does.
  const parts: Buffer[] = [];
  let onTheWire: { part: Buffer; copy: Buffer } | undefined;
  for await (const part of partsOf(source(), size)) {
    if (onTheWire) expect(onTheWire.part).toEqual(onTheWire.copy);
    onTheWire = { part, copy: Buffer.from(part) };
    parts.push(Buffer.from(part));
  }
  expect(Buffer.concat(parts)).toEqual(Buffer.concat(input));
  return parts.map((p) => p.length);
}

describe('partsOf regroups a stream into store parts', () => {
  it('makes parts of exactly the size, the last one smaller', async () => {
    expect(await regroup([3, 3, 3, 3, 1], 5)).toEqual([5, 5, 3]);
  });
  it('yields nothing for an empty stream and one part for a small one', async () => {
    expect(await regroup([], 5)).toEqual([]);
    expect(await regroup([0, 2], 5)).toEqual([2]);
  });
  it('splits a chunk larger than a part', async () => {
    expect(await regroup([12, 1], 5)).toEqual([5, 5, 3]);
  });
  it('leaves the part on the wire intact while the next one fills', async () => {
    expect(await regroup([4, 4, 4, 4, 4, 4, 4], 5)).toEqual([5, 5, 5, 5, 5, 3]);
  });
});

describe('mediaIdFromUrl', () => {
  const id = '0190f5a2-7c1e-4b7a-9c3d-2f1e0a9b8c7d';
  it.each([
    [`https://chat.example.com/v1/media/${id}/cat.png`, id],
    [`/v1/media/${id}/a%20b.png`, id],
    [`https://chat.example.com/v1/media/${id.toUpperCase()}/cat.png?x=1`, id],
    [`https://chat.example.com/v1/media/${id}`, undefined],
    [`https://chat.example.com/v1/media/${id}/a/b.png`, undefined],
    [`https://chat.example.com/elsewhere/v1/media/${id}/cat.png`, undefined],
    ['https://chat.example.com/v1/media/not-a-uuid-at-all-but-36-chars-long!/x', undefined],
    ['javascript:alert(1)', undefined],
  ])('%s -> %s', (url, expected) => {
    expect(mediaIdFromUrl(url)).toBe(expected);
  });
});
