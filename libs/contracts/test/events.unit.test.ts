import { describe, expect, it } from 'vitest';
import * as contracts from '../src/index.ts';

/** enqueueEvent refuses a service subject without a contract, so every subject a service names must have one. */
describe('EVENT_SCHEMAS', () => {
  it('has a payload schema for every subject of every *_SUBJECTS map', () => {
    const maps = Object.entries(contracts).filter(([name]) => name.endsWith('_SUBJECTS'));
    expect(maps.length).toBeGreaterThan(5);
    const subjects = maps.flatMap(([, map]) => Object.values(map as Record<string, string>));
    const missing = subjects.filter((subject) => !(subject in contracts.EVENT_SCHEMAS));
    expect(missing).toEqual([]);
  });
});
