import { describe, expect, it } from 'vitest';
import { type CpuProfile, summarizeProfile } from '../../scripts/bench/profile-summary.ts';

const frame = (functionName: string, url = '', lineNumber = 0) => ({ functionName, url, lineNumber });

/** A handler of ours that queries through pg (whose write lands in the engine's writev), idle time, and a collection. */
const profile: CpuProfile = {
  nodes: [
    { id: 1, callFrame: frame('(root)'), children: [2, 3, 6] },
    { id: 2, callFrame: frame('(idle)') },
    { id: 3, callFrame: frame('post', 'file:///srv/app/services/guilds/src/domain/messages.ts', 41), children: [4] },
    { id: 4, callFrame: frame('submit', 'file:///srv/app/node_modules/pg/lib/query.js', 150), children: [5] },
    { id: 5, callFrame: frame('Writable.uncork', 'node:internal/streams/writable', 520), children: [7] },
    { id: 6, callFrame: frame('(garbage collector)') },
    { id: 7, callFrame: frame('writev') },
  ],
  // Samples on idle (50 µs), post (20), writev (20), the collector (10).
  samples: [2, 3, 7, 6, 2],
  timeDeltas: [25, 20, 20, 10, 25],
};

describe('bench profile summary', () => {
  it('shares self time of the busy samples by origin and by function, and names who made the socket writes', () => {
    expect(summarizeProfile(profile)).toEqual({
      totalMs: 0.1,
      busyShare: 0.5,
      byOrigin: [
        ['services/guilds/src/domain/messages.ts', 0.4],
        ['writev', 0.4],
        ['(garbage collector)', 0.2],
      ],
      byFunction: [
        ['post services/guilds/src/domain/messages.ts:42', 0.4],
        ['writev', 0.4],
        ['(garbage collector)', 0.2],
      ],
      writesBy: [['submit pg/lib/query.js', 0.4]],
    });
  });

  it('keeps the top rows only', () => {
    expect(summarizeProfile(profile, 1).byFunction).toEqual([['post services/guilds/src/domain/messages.ts:42', 0.4]]);
  });
});
