import { describe, expect, it } from 'vitest';
import { redeliveryDelayMs } from '../src/events.ts';

describe('redeliveryDelayMs', () => {
  it('doubles from one second per delivery and stops at a minute', () => {
    expect([1, 2, 3, 4].map(redeliveryDelayMs)).toEqual([1_000, 2_000, 4_000, 8_000]);
    expect(redeliveryDelayMs(7)).toBe(60_000);
    expect(redeliveryDelayMs(50)).toBe(60_000);
  });
});
