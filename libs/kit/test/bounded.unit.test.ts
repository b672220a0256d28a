import { describe, expect, it } from 'vitest';
import { setBounded } from '../src/bounded.ts';

describe('setBounded', () => {
  it('drops the oldest key for a new one past the bound, and none when a kept key is set again', () => {
    const map = new Map([
      ['a', 1],
      ['b', 2],
    ]);
    setBounded(map, 'b', 20, 2);
    expect([...map]).toEqual([
      ['a', 1],
      ['b', 20],
    ]);
    setBounded(map, 'c', 3, 2);
    expect([...map]).toEqual([
      ['b', 20],
      ['c', 3],
    ]);
  });
});
