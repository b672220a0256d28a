import { describe, expect, it } from 'vitest';
import { channelList } from '../src/domain/channel-list.ts';

describe('what a kept channel list remembers per member', () => {
  it('computes an answer once per key and list, and again for another key or a new list', () => {
    let computed = 0;
    const compute = () => ({ computation: ++computed });
    const list = channelList(1, [], []);
    const first = list.memo('member-a', compute);
    expect(list.memo('member-a', compute)).toBe(first);
    expect(list.memo('member-b', compute)).toEqual({ computation: 2 });
    expect(channelList(2, [], []).memo('member-a', compute)).toEqual({ computation: 3 });
    expect(computed).toBe(3);
  });

  it('keeps a bounded number of members, forgetting the oldest first', () => {
    const list = channelList(1, [], []);
    for (let i = 0; i <= 256; i++) list.memo(`member-${i}`, () => i);
    expect(list.memo('member-256', () => -1)).toBe(256);
    expect(list.memo('member-1', () => -1)).toBe(1);
    expect(list.memo('member-0', () => -1)).toBe(-1);
  });
});
