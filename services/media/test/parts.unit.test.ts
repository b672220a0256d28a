import { mediaIdFromUrl } from '@chat/contracts';
import { describe, expect, it } from 'vitest';
import { partsOf } from '../src/storage.ts';

async function regroup(chunks: number[], size: number) {
  async function* source() {
    for (const length of chunks) yield Buffer.alloc(length, 1);
  }
  const parts: number[] = [];
  for await (const part of partsOf(source(), size)) parts.push(part.length);
  return parts;
}

describe('partsOf regroups a stream into store parts', () => {
  it('makes parts of at least the size, the last one smaller', async () => {
    expect(await regroup([3, 3, 3, 3, 1], 5)).toEqual([6, 6, 1]);
  });
  it('yields nothing for an empty stream and one part for a small one', async () => {
    expect(await regroup([], 5)).toEqual([]);
    expect(await regroup([0, 2], 5)).toEqual([2]);
  });
  it('keeps a chunk larger than a part whole', async () => {
    expect(await regroup([12, 1], 5)).toEqual([12, 1]);
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
